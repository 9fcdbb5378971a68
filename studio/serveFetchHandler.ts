/**
 * Serves a Fetch handler (`Request` → `Response`) from node:http: the request becomes a `Request`
 * whose signal aborts when the client goes away (which ends a live event stream), and the
 * response's body is streamed back as it is produced.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"

/** A node:http request listener calling `handler`. */
export const serveFetchHandler =
  (handler: (request: Request) => Promise<Response>) =>
  (incoming: IncomingMessage, outgoing: ServerResponse): void => {
    const aborted = new AbortController()
    outgoing.on("close", () => aborted.abort())
    const host = incoming.headers.host ?? "127.0.0.1"
    const headers = new Headers()
    for (const [name, value] of Object.entries(incoming.headers)) {
      if (value === undefined) continue
      for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item)
    }
    const method = incoming.method ?? "GET"
    const hasBody = method !== "GET" && method !== "HEAD"
    const request = new Request(`http://${host}${incoming.url ?? "/"}`, {
      method,
      headers,
      signal: aborted.signal,
      ...(hasBody
        ? { body: Readable.toWeb(incoming) as ReadableStream<Uint8Array>, duplex: "half" }
        : {}),
    } as RequestInit)
    void handler(request)
      .then(async (response) => {
        outgoing.writeHead(response.status, Object.fromEntries(response.headers))
        if (response.body === null || method === "HEAD") {
          outgoing.end()
          return
        }
        outgoing.flushHeaders()
        const reader = response.body.getReader()
        aborted.signal.addEventListener("abort", () => void reader.cancel().catch(() => {}))
        for (;;) {
          const { done, value } = await reader.read()
          if (done) break
          outgoing.write(value)
        }
        outgoing.end()
      })
      .catch(() => {
        if (!outgoing.headersSent) outgoing.writeHead(500)
        outgoing.end()
      })
  }
