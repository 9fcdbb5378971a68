/**
 * Turns the modules the writer (writer.ts) described, and the JSON documents, into their final text.
 * It lives apart from the writer because the layouts read the writer's declarations: were rendering
 * in writer.ts, the writer and typeScriptLayout.ts would import each other. The layouts are loaded
 * only when something is rendered, so planning and validating stay cheap.
 */
import { headerLines, type JsonDocument, type ModuleBuilder } from "./writer.js"

/** A generated file's path inside the output folder and its final bytes. */
export interface RenderedFile {
  readonly path: string
  readonly text: string
}

/**
 * Lays every module out as prettier formats it (see `typeScriptLayout.ts`), and every JSON document
 * as prettier would (see `jsonLayout.ts`). The files come back in the order given.
 */
export const renderFiles = async (
  modules: readonly ModuleBuilder[],
  documents: readonly JsonDocument[],
): Promise<RenderedFile[]> => {
  const [{ moduleDoc, printDoc }, { jsonText }] = await Promise.all([
    import("./typeScriptLayout.js"),
    import("./jsonLayout.js"),
  ])
  const rendered: RenderedFile[] = modules.map((module) => ({
    path: module.path,
    text: printDoc(moduleDoc(module.header, module.statements())),
  }))
  for (const { path, header, document } of documents) {
    rendered.push({
      path,
      text: await jsonText({ $comment: headerLines(header).join(" "), ...document }),
    })
  }
  return rendered
}
