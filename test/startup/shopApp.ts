/**
 * A runner process of one release of the shop, for multi-process tests:
 * `SHOP_VERSION=3 akter run test/startup/shopApp.ts --database-url …`. Started held (`RUNNER_HOLD`),
 * it loads the release and then waits to be let go before it opens the database.
 */
import { heldUntilReleased } from "../support/heldStart.js"
import { shop, type ShopVersion } from "./shopVersions.js"

const version = Number(process.env["SHOP_VERSION"] ?? "1")
if (version !== 1 && version !== 2 && version !== 3) {
  throw new Error(`SHOP_VERSION must be 1, 2 or 3, not ${process.env["SHOP_VERSION"]}`)
}
const release = await shop(version as ShopVersion)

export const workflows = [release.fulfill]
export const registrations = [release.registration]

await heldUntilReleased()
