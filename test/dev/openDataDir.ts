/**
 * A process that opens a PGlite data directory the way an application's client does
 * (`createAkter({ dataDir })`), for the directory-lock tests: prints `opened PID` and holds it until
 * killed when told `hold`, else closes at once; a refusal is printed as `refused TAG: MESSAGE` with
 * exit code 3.
 */
import { createAkter } from "../../runtime/akter.js"

const [dataDir, mode] = process.argv.slice(2)
try {
  const akter = await createAkter({ dataDir })
  console.log(`opened ${process.pid}`)
  if (mode === "hold") await new Promise(() => setInterval(() => {}, 60_000))
  await akter.close()
} catch (error) {
  const tag = (error as { _tag?: string })._tag ?? "untagged"
  console.log(`refused ${tag}: ${(error as Error).message}`)
  process.exitCode = 3
}
