/**
 * Type-checks files with the repository's TypeScript and compiler options, optionally with some
 * files' text replaced in memory, and returns every diagnostic with its file, line and message.
 */
import { fileURLToPath } from "node:url"
import ts from "typescript"

export const REPO = fileURLToPath(new URL("../../", import.meta.url))

export interface TypeError {
  readonly file: string
  /** 1-based. */
  readonly line: number
  readonly code: number
  readonly message: string
}

/** The compiler options of the repository's tsconfig.json. */
export const repoCompilerOptions = (): ts.CompilerOptions => {
  const path = `${REPO}tsconfig.json`
  const config = ts.readConfigFile(path, (file) => ts.sys.readFile(file))
  return ts.parseJsonConfigFileContent(config.config, ts.sys, REPO).options
}

/**
 * Only the errors in files under `folder`: other files (the runtime) may be someone's work in
 * progress, and what these tests prove is that generated code and its users compile.
 */
export const errorsUnder = (errors: readonly TypeError[], ...folders: readonly string[]) =>
  errors
    .filter((error) => folders.some((folder) => error.file.startsWith(folder)))
    .map((error) => `${error.file}:${error.line}: ${error.message}`)

export const typeCheck = (
  rootFiles: readonly string[],
  replaced: ReadonlyMap<string, string> = new Map(),
): TypeError[] => {
  const options = repoCompilerOptions()
  const host = ts.createCompilerHost(options)
  const readFile = host.readFile.bind(host)
  host.readFile = (file) => replaced.get(file) ?? readFile(file)
  const getSourceFile = host.getSourceFile.bind(host)
  host.getSourceFile = (file, language, onError) => {
    const text = replaced.get(file)
    return text === undefined
      ? getSourceFile(file, language, onError)
      : ts.createSourceFile(file, text, language)
  }
  const program = ts.createProgram([...rootFiles], options, host)
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const position =
      diagnostic.file === undefined || diagnostic.start === undefined
        ? { line: 0 }
        : diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start)
    return {
      file: diagnostic.file?.fileName ?? "",
      line: position.line + 1,
      code: diagnostic.code,
      message: ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"),
    }
  })
}
