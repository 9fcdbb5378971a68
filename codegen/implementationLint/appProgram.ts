/**
 * The narrow TypeScript program the lint reads: the app's files and the project files they import,
 * nothing else. Bare specifiers (`effect`, `node:crypto`, `akter`) are left unresolved, so no
 * declaration file of node_modules is read, and no default library is loaded either: a name the
 * checker cannot bind is a global, and an import is known by its module specifier. The generated SDK
 * is left out too (a large one is slow to bind); `GeneratedSdk` reads the few generated files a
 * builder goes through. The checker only binds symbols; nothing is type-checked.
 */
import { existsSync } from "node:fs"
import path from "node:path"
import { Project, ts } from "ts-morph"

/**
 * The `--app` patterns name nothing to lint: a pattern matches no file, or every file it matches is
 * generated or under node_modules. The CLI reports it as bad input (exit 2), like a bad option.
 */
export class AppPatternsUnmatched extends Error {
  constructor(message: string) {
    super(message)
    this.name = "AppPatternsUnmatched"
  }
}

export interface AppProgram {
  readonly root: string
  readonly outDir: string
  readonly program: ts.Program
  readonly checker: ts.TypeChecker
  /** The project's own source files in the program: the app's files and what they import. */
  readonly files: readonly ts.SourceFile[]
  /** Resolves a relative module specifier as TypeScript does, whether or not it is in the program. */
  readonly resolveModule: (specifier: string, fromFile: string) => string | undefined
}

export const COMPILER_OPTIONS: ts.CompilerOptions = {
  allowJs: true,
  noLib: true,
  noEmit: true,
  skipLibCheck: true,
  types: [],
  target: ts.ScriptTarget.ESNext,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowImportingTsExtensions: true,
  resolveJsonModule: false,
  jsx: ts.JsxEmit.Preserve,
}

const isRelative = (specifier: string) =>
  specifier.startsWith("./") ||
  specifier.startsWith("../") ||
  specifier === "." ||
  specifier === ".."

/** Whether `file` is inside `folder` (or is it). */
export const isInside = (file: string, folder: string): boolean => {
  const relative = path.relative(folder, file)
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative))
}

const isProjectSource = (file: string, outDir: string) =>
  !file.split(/[\\/]/).includes("node_modules") &&
  !isInside(file, outDir) &&
  !file.endsWith(".d.ts")

/**
 * Loads the files `patterns` name (paths or globs, relative to `cwd`) and the project files they
 * import. Throws `AppPatternsUnmatched` when they name no file to lint.
 *
 * @example
 * const app = loadAppProgram({ cwd, root, outDir, patterns: ["src/app.ts"] })
 */
export const loadAppProgram = (options: {
  readonly cwd: string
  readonly root: string
  readonly outDir: string
  readonly patterns: readonly string[]
}): AppProgram => {
  const { root, outDir } = options
  const moduleHost: ts.ModuleResolutionHost = {
    fileExists: (file) => ts.sys.fileExists(file),
    readFile: (file) => ts.sys.readFile(file),
  }
  const resolved = (specifier: string, fromFile: string) =>
    isRelative(specifier)
      ? ts.resolveModuleName(specifier, fromFile, COMPILER_OPTIONS, moduleHost).resolvedModule
      : undefined
  const resolveModule = (specifier: string, fromFile: string) =>
    resolved(specifier, fromFile)?.resolvedFileName
  const project = new Project({
    compilerOptions: COMPILER_OPTIONS,
    skipAddingFilesFromTsConfig: true,
    skipLoadingLibFiles: true,
    resolutionHost: () => ({
      resolveModuleNames: (names, containingFile) =>
        names.map((name) => {
          const module = resolved(name, containingFile)
          return module === undefined || !isProjectSource(module.resolvedFileName, outDir)
            ? undefined
            : module
        }),
    }),
  })
  const paths: string[] = []
  for (const pattern of options.patterns) {
    const absolute = path.resolve(options.cwd, pattern)
    if (existsSync(absolute)) {
      project.addSourceFileAtPath(absolute)
      paths.push(absolute)
      continue
    }
    const added = project.addSourceFilesAtPaths(absolute)
    if (added.length === 0) {
      throw new AppPatternsUnmatched(
        `--app ${path.relative(options.cwd, absolute)} matches no file`,
      )
    }
    paths.push(...added.map((file) => file.getFilePath()))
  }
  if (!paths.some((file) => isProjectSource(file, outDir))) {
    throw new AppPatternsUnmatched(
      `--app ${options.patterns.map((pattern) => path.relative(options.cwd, path.resolve(options.cwd, pattern))).join(" ")} names no implementation source (files of node_modules and of the generated folder are not linted)`,
    )
  }
  project.resolveSourceFileDependencies()
  const program = project.getProgram().compilerObject
  const files = program
    .getSourceFiles()
    .filter((file) => isProjectSource(path.resolve(file.fileName), outDir))
  return { root, outDir, program, checker: program.getTypeChecker(), files, resolveModule }
}
