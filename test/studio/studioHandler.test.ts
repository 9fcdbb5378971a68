/**
 * The studio's Fetch handler, driven with real Requests against a real database on both backends:
 * the token and its cookie, the pages and their filters, escaping of payloads, actions with their
 * CSRF and origin checks, a read-only studio refusing even a hand-made action, the bulk interrupt's
 * confirmation, a tenant-scoped studio, and the live stream announcing a change of an execution
 * and of a list. Expected rows are those the test started; what an action did is read back from
 * the database.
 */
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { makeOwnerClient, startRunner, type Runner } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { studioHandler, type StudioHandler } from "../../studio/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { makeVault } from "../hostile/vaultWorkflows.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const TOKEN = "studio-test-token-0123456789"
const ORIGIN = "http://studio.test"
const SCRIPT = "<script>alert('x')</script>"
const IMG = `"><img src=x onerror=alert(1)>`

const csrfOf = (page: string): string => {
  const match = /name="csrf" value="([^"]*)"/.exec(page)
  if (match === null) throw new Error("the page holds no CSRF field")
  return match[1]!
}

/** Reads a server-sent stream until a text arrives, failing once `withinMs` have passed. */
const eventReader = (response: Response) => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  return {
    until: async (needle: string, withinMs = 5_000) => {
      const deadline = Date.now() + withinMs
      while (!text.includes(needle)) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const chunk = await Promise.race([
          reader.read(),
          new Promise<"late">((resolve) => {
            timer = setTimeout(resolve, deadline - Date.now(), "late")
          }),
        ]).finally(() => clearTimeout(timer))
        if (chunk === "late") throw new Error(`no ${needle} within ${withinMs} ms: ${text}`)
        if (chunk.done) throw new Error(`stream ended before ${needle}: ${text}`)
        text += decoder.decode(chunk.value)
      }
    },
    received: () => text,
    cancel: () => reader.cancel().catch(() => {}),
  }
}

describeEachBackend("studio handler", (backend) => {
  let akter: TestAkter
  let runner: Runner
  let studio: StudioHandler
  let readOnly: StudioHandler
  let cookie = ""
  const ids: Record<string, string> = {}

  const get = (handler: StudioHandler, path: string, headers: Record<string, string> = {}) =>
    handler(new Request(`${ORIGIN}${path}`, { headers: { cookie, ...headers } }))
  const post = (
    handler: StudioHandler,
    path: string,
    fields: Record<string, string>,
    headers: Record<string, string> = {},
  ) =>
    handler(
      new Request(`${ORIGIN}${path}`, {
        method: "POST",
        headers: {
          cookie,
          origin: ORIGIN,
          "content-type": "application/x-www-form-urlencoded",
          ...headers,
        },
        body: new URLSearchParams(fields).toString(),
      }),
    )
  /** What the database holds of an execution (of the suite's handle, or of `on`). */
  const status = async (executionId: string, on: TestAkter = akter) => {
    const { rows } = await sql<{ status: string; interrupt: boolean; outcome: string | null }>`
      SELECT status, interrupt, outcome FROM akter.executions WHERE execution_id = ${executionId}`.execute(
      internalsOf(on).storage.db,
    )
    return rows[0]
  }

  beforeAll(async () => {
    const vault = await makeVault()
    akter = await openTestAkter(backend)
    runner = await startRunner({ akter, workflows: vault.workflows, pollMs: 20 })
    const vaults = makeOwnerClient<AnyClient>(akter, vault.vault)
    const acme = makeOwnerClient<AnyClient>(akter, vault.vault, { tenant: "acme" })
    const entry = (note: string) => ({ name: "n", note, tags: [IMG] })
    akter.advance("1 second")
    ids["hostile"] = (
      await vaults.store.start("o-1", { name: SCRIPT, amount: 1, entry: entry(SCRIPT) })
    ).executionId
    akter.advance("1 second")
    ids["stored"] = (
      await vaults.store.start("o-2", { name: "s-2", amount: 2, entry: entry("c-42") })
    ).executionId
    for (const name of ["l-1", "l-2", "l-3"]) {
      akter.advance("1 second")
      ids[name] = (await vaults.listen.start(name === "l-3" ? "o-5" : "o-3", { name })).executionId
    }
    akter.advance("1 second")
    ids["hold"] = (await vaults.hold.start("o-4", undefined)).executionId
    akter.advance("1 second")
    ids["acme"] = (await acme.listen.start("o-1", { name: "a-1" })).executionId
    await vaults.emit("o-5", "Said", { text: IMG })
    await runUntilIdle(akter, runner)
    studio = studioHandler(akter, { token: TOKEN, liveIntervalMs: 50 })
    readOnly = studioHandler(akter, { readOnly: true })
    const signIn = await get(studio, `/?token=${TOKEN}`)
    expect(signIn.status).toBe(303)
    expect(signIn.headers.get("location")).toBe("/")
    cookie = signIn.headers.get("set-cookie")!.split(";")[0]!
  })

  afterAll(async () => {
    await studio?.close()
    await readOnly?.close()
    await runner?.close()
    await akter?.close()
  })

  it("refuses to make a studio that may act without a token", () => {
    expect(() => studioHandler(akter)).toThrow(/actions need a token/)
    expect(() => studioHandler(akter, { token: "short" })).toThrow(/at least 16 characters/)
  })

  it("asks for the token before showing anything, and refuses a wrong one", async () => {
    const anonymous = await studio(new Request(`${ORIGIN}/executions`))
    expect(anonymous.status).toBe(401)
    expect(await anonymous.text()).not.toContain(ids["stored"]!)
    expect((await studio(new Request(`${ORIGIN}/?token=wrong-token-0123456789`))).status).toBe(401)
    const bearer = await studio(
      new Request(`${ORIGIN}/executions`, { headers: { authorization: `Bearer ${TOKEN}` } }),
    )
    expect(bearer.status).toBe(200)
  })

  it("the overview shows executions by workflow and status, and the runner", async () => {
    const response = await get(studio, "/")
    expect(response.status).toBe(200)
    expect(response.headers.get("content-security-policy")).toContain("script-src 'self'")
    const page = await response.text()
    expect(page).toContain("Vault.listen")
    expect(page).toContain("Vault.store")
    // l-1, l-2, hold and acme's a-1 are open; l-3 heard its event and finished.
    expect(page).toMatch(/data-figure="open">4</)
    expect(page).toContain(runner.id)
  })

  it("lists executions newest first, filters by status, outcome, key, owner and input field, and pages by cursor", async () => {
    const rows = (page: string) => [...page.matchAll(/data-execution="([^"]+)"/g)].map((m) => m[1])
    const all = await (await get(studio, "/executions")).text()
    expect(rows(all)).toEqual([
      ids["acme"],
      ids["hold"],
      ids["l-3"],
      ids["l-2"],
      ids["l-1"],
      ids["stored"],
      ids["hostile"],
    ])
    expect(all).toContain('data-count="7"')
    const suspended = await (await get(studio, "/executions?status=suspended")).text()
    expect(rows(suspended)).toEqual([ids["acme"], ids["hold"], ids["l-2"], ids["l-1"]])
    const succeeded = await (await get(studio, "/executions?status=succeeded")).text()
    expect(rows(succeeded)).toEqual([ids["l-3"], ids["stored"], ids["hostile"]])
    expect(rows(await (await get(studio, "/executions?status=failed")).text())).toEqual([])
    expect(rows(await (await get(studio, "/executions?key=l-2")).text())).toEqual([ids["l-2"]])
    expect(
      rows(
        await (await get(studio, "/executions?ownerType=Vault&ownerId=o-3&tenant=default")).text(),
      ),
    ).toEqual([ids["l-2"], ids["l-1"]])
    expect(
      rows(
        await (
          await get(studio, `/executions?input=${encodeURIComponent("entry.note = c-42")}`)
        ).text(),
      ),
    ).toEqual([ids["stored"]])
    expect(
      rows(
        await (
          await get(studio, `/executions?input=${encodeURIComponent(`input.name=${SCRIPT}`)}`)
        ).text(),
      ),
    ).toEqual([ids["hostile"]])
    const seen: string[] = []
    const first = await (await get(studio, "/executions?status=open")).text()
    expect(rows(first)).toHaveLength(4)
    // The same four, one page of one at a time, each page starting after the last by cursor.
    let path: string | undefined = "/executions?status=open&limit=1"
    while (path !== undefined) {
      const page: string = await (await get(studio, path)).text()
      seen.push(...(rows(page) as string[]))
      const next: string | undefined = /rel="next"\s+href="([^"]+)"/.exec(page)?.[1]
      path = next === undefined ? undefined : next.replaceAll("&amp;", "&")
    }
    expect(seen).toEqual(rows(first))
  })

  it("refuses a malformed filter, naming the field", async () => {
    const response = await get(studio, "/executions?from=yesterday")
    expect(response.status).toBe(400)
    expect(await response.text()).toContain("filter from: &quot;yesterday&quot; is not a time")
    const cursor = await get(studio, "/executions?cursor=forged")
    expect(cursor.status).toBe(400)
    expect(await cursor.text()).toContain("filter cursor")
  })

  it('renders payloads holding <script> and "><img onerror> as text', async () => {
    const page = await (
      await get(studio, `/executions/${encodeURIComponent(ids["hostile"]!)}`)
    ).text()
    expect(page).toContain("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")
    expect(page).toContain("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;")
    expect(page).not.toContain("<script>alert")
    expect(page).not.toContain("<img")
    expect(page.match(/<script/g)).toHaveLength(1) // the studio's own script file
    const list = await (await get(studio, "/executions")).text()
    expect(list).not.toContain("<script>alert")
    // The event a wait matched, shown on the execution page, is escaped too.
    const heard = await (await get(studio, `/executions/${encodeURIComponent(ids["l-3"]!)}`)).text()
    expect(heard).not.toContain("<img")
  })

  it("shows an execution's steps, its timer and its owner's events", async () => {
    const page = await (await get(studio, `/executions/${encodeURIComponent(ids["l-1"]!)}`)).text()
    expect(page).toContain('data-step="heard"')
    expect(page).toContain("waits for Said")
    const hold = await (await get(studio, `/executions/${encodeURIComponent(ids["hold"]!)}`)).text()
    expect(hold).toContain('data-step="nap"')
    expect(hold).toMatch(/due <time/)
    const owner = await (await get(studio, "/owners/Vault/o-5?tenant=default")).text()
    expect(owner).toContain("Said")
    expect(owner).toContain(ids["l-3"]!)
    expect(owner).not.toContain("<img")
    expect((await get(studio, "/executions/ak1.bogus")).status).toBe(404)
  })

  it("interrupts an execution only with the CSRF token and from its own origin", async () => {
    const target = ids["l-1"]!
    const page = await (await get(studio, `/executions/${encodeURIComponent(target)}`)).text()
    const csrf = csrfOf(page)
    expect((await post(studio, "/actions/interrupt", { executionId: target })).status).toBe(403)
    expect(
      (await post(studio, "/actions/interrupt", { executionId: target, csrf: "x".repeat(43) }))
        .status,
    ).toBe(403)
    expect(
      (
        await post(
          studio,
          "/actions/interrupt",
          { executionId: target, csrf },
          {
            origin: "http://evil.test",
          },
        )
      ).status,
    ).toBe(403)
    expect(
      (
        await post(
          studio,
          "/actions/interrupt",
          { executionId: target, csrf },
          {
            "sec-fetch-site": "cross-site",
          },
        )
      ).status,
    ).toBe(403)
    expect(await status(target)).toEqual({ status: "suspended", interrupt: false, outcome: null })
    const done = await post(studio, "/actions/interrupt", { executionId: target, csrf })
    expect(done.status).toBe(303)
    expect((await status(target))?.interrupt).toBe(true)
    await runUntilIdle(akter, runner)
    expect(await status(target)).toEqual({
      status: "finished",
      interrupt: true,
      outcome: "interrupted",
    })
    const after = await (await get(studio, `/executions/${encodeURIComponent(target)}`)).text()
    expect(after).toContain('data-status="interrupted"')
    expect(after).not.toContain('data-action="interrupt"')
  })

  it("makes a sleeping execution's timer due now", async () => {
    const target = ids["hold"]!
    const page = await (await get(studio, `/executions/${encodeURIComponent(target)}`)).text()
    expect(page).toContain('data-action="timer-due-now"')
    const response = await post(studio, "/actions/timer-due-now", {
      executionId: target,
      csrf: csrfOf(page),
    })
    expect(response.headers.get("location")).toContain("notice=timer-due")
    await runUntilIdle(akter, runner)
    // Its one-hour nap is due at once, so it finished without the clock moving an hour.
    expect(await status(target)).toEqual({
      status: "finished",
      interrupt: false,
      outcome: "succeeded",
    })
  })

  it("bulk-interrupts the current filter after a confirmation showing the count", async () => {
    const list = await (
      await get(studio, "/executions?ownerType=Vault&workflow=listen&status=open")
    ).text()
    expect(list).toContain('data-action="bulk-interrupt"')
    const filter = { ownerType: "Vault", workflow: "listen", status: "open", csrf: csrfOf(list) }
    const confirm = await post(studio, "/actions/bulk-interrupt", filter)
    expect(confirm.status).toBe(200)
    const confirmPage = await confirm.text()
    // l-2 and acme's a-1 are the open listens (l-1 was interrupted, l-3 heard its event).
    expect(confirmPage).toContain("Interrupt 2 open executions?")
    expect(await status(ids["l-2"]!)).toMatchObject({ interrupt: false })
    const done = await post(studio, "/actions/bulk-interrupt", { ...filter, confirm: "2" })
    expect(done.status).toBe(303)
    expect(done.headers.get("location")).toContain("interrupted=2")
    expect(await status(ids["l-2"]!)).toMatchObject({ interrupt: true })
    expect(await status(ids["acme"]!)).toMatchObject({ interrupt: true })
    await runUntilIdle(akter, runner)
    expect(await status(ids["l-2"]!)).toMatchObject({ outcome: "interrupted" })
  })

  it("a read-only studio renders no action and refuses a hand-made one", async () => {
    const before = await status(ids["stored"]!)
    for (const path of ["/", "/executions", `/executions/${encodeURIComponent(ids["hostile"]!)}`]) {
      const page = await (await readOnly(new Request(`${ORIGIN}${path}`))).text()
      expect(page).not.toContain('method="post"')
      expect(page).not.toContain("data-action")
      expect(page).toContain("read-only")
    }
    for (const action of ["interrupt", "timer-due-now", "bulk-interrupt"]) {
      const response = await readOnly(
        new Request(`${ORIGIN}/actions/${action}`, {
          method: "POST",
          headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
          body: `executionId=${encodeURIComponent(ids["stored"]!)}&csrf=anything&confirm=1`,
        }),
      )
      expect(response.status).toBe(403)
    }
    expect(await status(ids["stored"]!)).toEqual(before)
  })

  it("a studio given a tenant shows that tenant only", async () => {
    const acme = studioHandler(akter, { readOnly: true, tenant: "acme" })
    try {
      const list = await (await acme(new Request(`${ORIGIN}/executions`))).text()
      expect(list).toContain(ids["acme"]!)
      expect(list).not.toContain(ids["stored"]!)
      expect(list).not.toContain('name="tenant"')
      const foreign = await acme(
        new Request(`${ORIGIN}/executions/${encodeURIComponent(ids["stored"]!)}`),
      )
      expect(foreign.status).toBe(404)
      const overview = await (await acme(new Request(`${ORIGIN}/`))).text()
      expect(overview).not.toContain("Vault.store")
      const compatibility = await (await acme(new Request(`${ORIGIN}/compatibility`))).text()
      expect(compatibility).toContain("would count every tenant")
    } finally {
      await acme.close()
    }
  })

  it("the live stream announces a change of the execution a page shows", async () => {
    const vault = await makeVault()
    const vaults = makeOwnerClient<AnyClient>(akter, vault.vault)
    const run = await vaults.listen.start("o-9", { name: "live-1" })
    await runUntilIdle(akter, runner)
    const aborted = new AbortController()
    const response = await studio(
      new Request(`${ORIGIN}/events?execution=${encodeURIComponent(run.executionId)}`, {
        headers: { cookie },
        signal: aborted.signal,
      }),
    )
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    const events = eventReader(response)
    await events.until(": connected")
    // Let the hub take its first fingerprint, then change the execution.
    await new Promise((resolve) => setTimeout(resolve, 300))
    await vaults.emit("o-9", "Said", { text: "hello" })
    await runUntilIdle(akter, runner)
    await events.until("event: change")
    // Nothing of the execution rides the stream: a tenant's studio may be asked about any id.
    expect(events.received()).toContain("event: change\ndata: changed\n\n")
    expect(events.received()).not.toMatch(/suspended|running|finished/)
    aborted.abort()
    await events.cancel()
  })

  it("a list's live stream announces an open execution that suspends", async () => {
    // A database of its own, with no runner until the stream is open: the start leaves its
    // execution running, and the runner's pass then suspends it — no start, finish or interrupt
    // in between for the list's stamp to follow.
    const vault = await makeVault()
    const own = await openTestAkter(backend)
    const lists = studioHandler(own, { readOnly: true, liveIntervalMs: 50 })
    const aborted = new AbortController()
    let moving: Runner | undefined
    try {
      const run = await makeOwnerClient<AnyClient>(own, vault.vault).listen.start("o-1", {
        name: "moving",
      })
      expect((await status(run.executionId, own))?.status).toBe("running")
      const events = eventReader(
        await lists(new Request(`${ORIGIN}/events`, { signal: aborted.signal })),
      )
      await events.until(": connected")
      // Let the hub take its first stamp while the execution is running.
      await new Promise((resolve) => setTimeout(resolve, 300))
      moving = await startRunner({ akter: own, workflows: vault.workflows, pollMs: 20 })
      await runUntilIdle(own, moving)
      expect((await status(run.executionId, own))?.status).toBe("suspended")
      await events.until("event: change")
      await events.cancel()
    } finally {
      aborted.abort()
      await lists.close()
      await moving?.close()
      await own.close()
    }
  })
})
