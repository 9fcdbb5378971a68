/**
 * The classification that decides what a client retries and what a runner counts as an outage:
 * failures of a server going away, of the socket and of the driver are connection-class; a wrong
 * statement is not. The cases are the errors the fault suite met (57P01 on a restart, "Connection
 * terminated unexpectedly" on an immediate stop, ECONNREFUSED while down, pg-pool's connect
 * timeout on a paused server), each built as node-postgres builds it.
 */
import { describe, expect, it } from "vitest"
import { isConnectionError, isConnectionMessage } from "../../runtime/storage/connectionErrors.js"

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code })

describe("connection-class errors", () => {
  const connection: readonly [string, unknown][] = [
    [
      "57P01 on a fast restart",
      withCode("terminating connection due to administrator command", "57P01"),
    ],
    [
      "57P02 after a backend crash",
      withCode("terminating connection due to crash of another server process", "57P02"),
    ],
    ["57P03 while the server starts", withCode("the database system is starting up", "57P03")],
    ["08006 connection failure", withCode("connection failure", "08006")],
    ["08001 unable to connect", withCode("could not connect", "08001")],
    ["a refused socket", withCode("connect ECONNREFUSED 127.0.0.1:5999", "ECONNREFUSED")],
    ["a reset socket", withCode("read ECONNRESET", "ECONNRESET")],
    ["a broken pipe", withCode("write EPIPE", "EPIPE")],
    ["an immediate stop", new Error("Connection terminated unexpectedly")],
    ["a connect timeout", new Error("Connection terminated due to connection timeout")],
    ["pg-pool waiting for a client", new Error("timeout exceeded when trying to connect")],
    [
      "a client already broken",
      new Error("Client has encountered a connection error and is not queryable"),
    ],
    [
      "wrapped as a cause",
      new Error("write failed", { cause: withCode("read ECONNRESET", "ECONNRESET") }),
    ],
    [
      "inside an AggregateError",
      new AggregateError([withCode("x", "ECONNREFUSED")], "all refused"),
    ],
  ]
  for (const [name, error] of connection) {
    it(`counts ${name} as connection-class`, () => {
      expect(isConnectionError(error)).toBe(true)
    })
  }

  const statement: readonly [string, unknown][] = [
    ["a unique violation", withCode("duplicate key value violates unique constraint", "23505")],
    ["a serialization failure", withCode("could not serialize access", "40001")],
    ["a syntax error", withCode('syntax error at or near "SELEC"', "42601")],
    ["a statement timeout", withCode("canceling statement due to statement timeout", "57014")],
    ["an undefined table", withCode('relation "akter.nope" does not exist', "42P01")],
    ["a plain bug", new TypeError("cannot read properties of undefined")],
    ["a string", "Connection terminated"],
    ["nothing", undefined],
  ]
  for (const [name, error] of statement) {
    it(`does not count ${name} as connection-class`, () => {
      expect(isConnectionError(error)).toBe(false)
    })
  }

  it("reads a pass's abandon reason, which holds only the failure's text", () => {
    expect(isConnectionMessage("write failed: Error: Connection terminated unexpectedly")).toBe(
      true,
    )
    expect(
      isConnectionMessage(
        "finish failed: error: terminating connection due to administrator command",
      ),
    ).toBe(true)
    expect(isConnectionMessage("write failed: StaleGeneration")).toBe(false)
  })
})
