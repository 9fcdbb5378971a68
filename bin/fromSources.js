// akter's repository only (never packed): loads the CLI from its TypeScript sources. tsx compiles
// them, and every import of "akter" in this process — the examples, generated code, an app under
// test — resolves through the `akter-source` export condition to the same sources, never to dist/.
import { register } from "node:module"
import { register as registerTsx } from "tsx/esm/api"

const addSourceCondition = `export const resolve = (specifier, context, next) =>
  next(specifier, { ...context, conditions: [...context.conditions, "akter-source"] })`

export const loadSources = async () => {
  register(`data:text/javascript,${encodeURIComponent(addSourceCondition)}`)
  registerTsx()
  const [{ main }, { repositoryCommands }] = await Promise.all([
    import("../cli/main.ts"),
    import("../examples/demo/repositoryCommands.ts"),
  ])
  return { main, extraCommands: repositoryCommands }
}
