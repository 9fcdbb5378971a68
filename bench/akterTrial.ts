/**
 * akter's side of one trial of shapes a–g: a runner and a client in this process
 * (`akterBench.ts`), on the trial's Postgres database, driven through `shapeTrials.ts`. `run.ts`
 * starts one process per trial; by hand:
 * `node --import tsx --expose-gc bench/akterTrial.ts '{"shape":"a","databaseUrl":"postgres://…/db","scale":1}'`.
 */
import { openAkterBench } from "./akterBench.js"
import { SHAPES } from "./shapes.js"
import { runShape } from "./shapeTrials.js"
import { serveTrial } from "./trialChild.js"

serveTrial(async (request) => {
  const { bench, close } = await openAkterBench(
    request.databaseUrl,
    request.shape === "b" ? SHAPES.b.concurrency : undefined,
  )
  try {
    return await runShape(request, bench)
  } finally {
    await close()
  }
})
