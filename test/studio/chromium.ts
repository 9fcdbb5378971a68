/**
 * What the studio's browser suites share: Debian's Chromium (/usr/bin/chromium) launched headless
 * by playwright-core with a profile directory of its own, and node:http servers on loopback.
 */
import { mkdtempSync, rmSync } from "node:fs"
import type { Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chromium, type BrowserContext } from "playwright-core"

export const CHROMIUM = "/usr/bin/chromium"

/** Listens on 127.0.0.1 on a free port; resolves to the server's base URL. */
export const listenOnLoopback = (server: Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resolve(
        `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`,
      )
    }),
  )

/** Closes servers, their open connections (live streams) first. */
export const closeServers = async (servers: readonly Server[]) => {
  for (const server of servers) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}

/** A headless Chromium with a fresh profile; `close()` also removes the profile. */
export const launchChromium = async (
  viewport: { width: number; height: number } = { width: 1280, height: 800 },
): Promise<BrowserContext> => {
  const profile = mkdtempSync(join(tmpdir(), "akter-studio-chromium-"))
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  })
  const close = browser.close.bind(browser)
  browser.close = async (...args) => {
    await close(...args)
    rmSync(profile, { recursive: true, force: true })
  }
  return browser
}
