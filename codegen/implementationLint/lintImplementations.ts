/**
 * The lint of the implementations: finds every `implement({ activities, body })` of a generated
 * builder in the app's sources, follows each body into the project's own functions (other files
 * too; never into node_modules, never into an activity), and reports what a replay cannot repeat:
 * nondeterministic calls, plain Promises, writes to module-level state. Per workflow it then
 * compares what the bodies use with what the manifest declares: a step no body calls, a marker no
 * body reads, a marker read but not declared. Suppression comments are applied last.
 */
import path from "node:path"
import { ts } from "ts-morph"
import type { FindingLocation } from "../../runtime/compatibility/finding.js"
import type { WorkflowDecl } from "../../runtime/model/manifest.js"
import type { LoadedManifest } from "../manifest/loadManifests.js"
import { isInside, loadAppProgram, type AppProgram } from "./appProgram.js"
import { GeneratedSdk, type GeneratedValue } from "./generatedSdk.js"
import {
  compareLintFindings,
  lintFindingOf,
  type LintDraft,
  type LintFinding,
} from "./lintRules.js"
import {
  dateWithoutArgumentsReason,
  directUseReason,
  memberUseReason,
  runsPromise,
  type NameOrigin,
} from "./nondeterministicApis.js"
import { applySuppressions, readSuppressions } from "./suppressions.js"

export interface LintResult {
  /** Sorted by file, line and column; suppressed findings are kept, marked `ignored`. */
  readonly findings: readonly LintFinding[]
  /** How many project files were read, and how many implementations were found in them. */
  readonly files: number
  readonly implementations: number
}

/** What a body's `wf` handle is used for, over every body implementing one workflow. */
interface HandleUse {
  readonly steps: Set<string>
  readonly markers: { readonly name: string; readonly node: ts.Node }[]
  /** A marker read with a name the lint cannot read, or the handle passed where it cannot follow. */
  unknownUse: boolean
}

interface Implementation {
  readonly owner: string
  readonly workflowName: string
  readonly declaration: WorkflowDecl
  readonly manifestFile: string
  /** Where the body is given: the `body` property, else the `implement(…)` call. */
  readonly anchor: ts.Node
  readonly use: HandleUse
}

type UserValue = GeneratedValue | { readonly kind: "missing"; readonly specifier: string }

const MUTATING_METHODS = new Set([
  "push",
  "pop",
  "shift",
  "unshift",
  "splice",
  "sort",
  "reverse",
  "fill",
  "copyWithin",
  "set",
  "add",
  "delete",
  "clear",
])

const GLOBAL_OBJECTS = new Set(["globalThis", "window", "global", "self"])

const unwrap = (expression: ts.Expression): ts.Expression => {
  let current = expression
  while (
    ts.isParenthesizedExpression(current) ||
    ts.isAsExpression(current) ||
    ts.isSatisfiesExpression(current) ||
    ts.isNonNullExpression(current) ||
    ts.isTypeAssertionExpression(current)
  ) {
    current = current.expression
  }
  return current
}

const isFunctionLike = (node: ts.Node): node is ts.FunctionLikeDeclaration =>
  ts.isArrowFunction(node) ||
  ts.isFunctionExpression(node) ||
  ts.isFunctionDeclaration(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node) ||
  ts.isConstructorDeclaration(node)

const isTypeLevel = (node: ts.Node) =>
  (node.kind >= ts.SyntaxKind.FirstTypeNode && node.kind <= ts.SyntaxKind.LastTypeNode) ||
  ts.isInterfaceDeclaration(node) ||
  ts.isTypeAliasDeclaration(node) ||
  ts.isImportDeclaration(node) ||
  ts.isExportDeclaration(node) ||
  ts.isTypeParameterDeclaration(node) ||
  node.kind === ts.SyntaxKind.ExpressionWithTypeArguments

/** A name that declares something, or a member name (handled with its property access). */
const isNameNotReference = (node: ts.Node): boolean => {
  const parent = node.parent
  if (ts.isPropertyAccessExpression(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name === node
  }
  if (ts.isBindingElement(parent)) return parent.propertyName === node || parent.name === node
  return (
    (ts.isVariableDeclaration(parent) ||
      ts.isParameter(parent) ||
      ts.isFunctionDeclaration(parent) ||
      ts.isClassDeclaration(parent) ||
      ts.isMethodDeclaration(parent)) &&
    parent.name === node
  )
}

const isAssignment = (kind: ts.SyntaxKind) =>
  kind >= ts.SyntaxKind.FirstAssignment && kind <= ts.SyntaxKind.LastAssignment

const moduleSpecifierOf = (declaration: ts.Declaration): string | undefined => {
  const node = ts.isImportSpecifier(declaration)
    ? declaration.parent.parent.parent
    : ts.isNamespaceImport(declaration)
      ? declaration.parent.parent
      : ts.isImportClause(declaration)
        ? declaration.parent
        : ts.isExportSpecifier(declaration)
          ? declaration.parent.parent
          : ts.isNamespaceExport(declaration)
            ? declaration.parent
            : undefined
  const specifier = node?.moduleSpecifier
  return specifier !== undefined && ts.isStringLiteral(specifier) ? specifier.text : undefined
}

const importedNameOf = (declaration: ts.Declaration): string =>
  ts.isImportSpecifier(declaration) || ts.isExportSpecifier(declaration)
    ? (declaration.propertyName ?? declaration.name).text
    : ts.isNamespaceImport(declaration) || ts.isNamespaceExport(declaration)
      ? "*"
      : "default"

const isRelative = (specifier: string) => specifier.startsWith(".")

const shortText = (node: ts.Node, source: ts.SourceFile) => {
  const text = node.getText(source).replace(/\s+/g, " ")
  return text.length > 48 ? `${text.slice(0, 45)}…` : text
}

/**
 * Lints the implementations of `app` against the manifests they were generated from.
 *
 * @example
 * const result = lintImplementations(loadAppProgram({ cwd, root, outDir, patterns }), loaded.manifests)
 */
export const lintImplementations = (
  app: AppProgram,
  manifests: readonly LoadedManifest[],
): LintResult => {
  const { checker, root } = app
  const projectFiles = new Set(app.files)
  const sdk = new GeneratedSdk(app.resolveModule)
  const found = new Map<string, LintFinding>()

  const locationOf = (node: ts.Node): FindingLocation => {
    const source = node.getSourceFile()
    const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source))
    return {
      file: path.relative(root, source.fileName).split(path.sep).join("/"),
      line: line + 1,
      column: character + 1,
    }
  }
  const report = (draft: Omit<LintDraft, "location">, node: ts.Node) => {
    const location = locationOf(node)
    const key = `${draft.rule}:${location.file}:${location.line}:${location.column}:${draft.step ?? ""}:${draft.marker ?? ""}`
    if (!found.has(key)) found.set(key, lintFindingOf({ ...draft, location }))
  }

  const symbolCache = new Map<ts.Node, ts.Symbol | undefined>()
  const symbolAt = (node: ts.Node) => {
    if (!symbolCache.has(node)) symbolCache.set(node, checker.getSymbolAtLocation(node))
    return symbolCache.get(node)
  }

  const isProjectNode = (node: ts.Node) => projectFiles.has(node.getSourceFile())

  /** Where a name comes from outside the project: a global, or an import of a bare specifier. */
  const originOf = (identifier: ts.Identifier): NameOrigin | undefined => {
    let symbol = symbolAt(identifier)
    if (symbol === undefined) return { kind: "global", name: identifier.text }
    for (let hops = 0; hops < 16 && symbol !== undefined; hops++) {
      const declaration: ts.Declaration | undefined = symbol.declarations?.[0]
      if (declaration === undefined) return undefined
      const specifier = moduleSpecifierOf(declaration)
      if (specifier !== undefined && !isRelative(specifier)) {
        return { kind: "import", module: specifier, name: importedNameOf(declaration) }
      }
      if ((symbol.flags & ts.SymbolFlags.Alias) === 0) return undefined
      const next: ts.Symbol | undefined = checker.getImmediateAliasedSymbol(symbol)
      if (next === symbol) return undefined
      symbol = next
    }
    return undefined
  }

  /** The origin of `E` in `E.member`, seeing through `globalThis.E`. */
  const receiverOrigin = (expression: ts.Expression): NameOrigin | undefined => {
    const receiver = unwrap(expression)
    if (ts.isIdentifier(receiver)) return originOf(receiver)
    if (
      ts.isPropertyAccessExpression(receiver) &&
      ts.isIdentifier(receiver.expression) &&
      GLOBAL_OBJECTS.has(receiver.expression.text) &&
      symbolAt(receiver.expression) === undefined
    ) {
      return { kind: "global", name: receiver.name.text }
    }
    return undefined
  }

  /** The declaration a project symbol ends at, through imports and re-exports. */
  const declarationsOf = (symbol: ts.Symbol | undefined): readonly ts.Declaration[] => {
    if (symbol === undefined) return []
    const target =
      (symbol.flags & ts.SymbolFlags.Alias) !== 0 ? checker.getAliasedSymbol(symbol) : symbol
    return (target.declarations ?? []).filter(isProjectNode)
  }

  /** The project function (or class) a name stands for, if it is one. */
  const functionOf = (name: ts.Node): ts.Node | undefined => {
    for (const declaration of declarationsOf(symbolAt(name))) {
      if (isFunctionLike(declaration) && declaration.body !== undefined) return declaration
      if (ts.isClassDeclaration(declaration) || ts.isClassExpression(declaration))
        return declaration
      if (
        (ts.isVariableDeclaration(declaration) || ts.isPropertyAssignment(declaration)) &&
        declaration.initializer !== undefined
      ) {
        const value = unwrap(declaration.initializer)
        if (isFunctionLike(value) || ts.isClassExpression(value)) return value
      }
      if (ts.isShorthandPropertyAssignment(declaration)) {
        const value = checker.getShorthandAssignmentValueSymbol(declaration)
        const declarations = declarationsOf(value)
        const first = declarations[0]
        if (
          first !== undefined &&
          ts.isVariableDeclaration(first) &&
          first.initializer !== undefined
        ) {
          const initializer = unwrap(first.initializer)
          if (isFunctionLike(initializer)) return initializer
        }
        const fn = declarations.find((d) => isFunctionLike(d))
        if (fn !== undefined) return fn
      }
    }
    return undefined
  }

  /** A module-level variable of the project that `target` (`x`, `x.y`, `x[i]`) writes into. */
  const moduleVariableWritten = (target: ts.Expression): ts.VariableDeclaration | undefined => {
    let root = unwrap(target)
    while (ts.isPropertyAccessExpression(root) || ts.isElementAccessExpression(root)) {
      root = unwrap(root.expression)
    }
    if (!ts.isIdentifier(root)) return undefined
    for (const declaration of declarationsOf(symbolAt(root))) {
      if (
        ts.isVariableDeclaration(declaration) &&
        ts.isVariableDeclarationList(declaration.parent) &&
        ts.isVariableStatement(declaration.parent.parent) &&
        ts.isSourceFile(declaration.parent.parent.parent)
      ) {
        return declaration
      }
    }
    return undefined
  }

  /** Follows the app's expression `Order.fulfill` to the generated builder it names. */
  const userValueOf = (expression: ts.Expression, depth = 0): UserValue | undefined => {
    if (depth > 16) return undefined
    const value = unwrap(expression)
    if (ts.isPropertyAccessExpression(value) || ts.isElementAccessExpression(value)) {
      const name = ts.isPropertyAccessExpression(value)
        ? value.name.text
        : ts.isStringLiteral(value.argumentExpression)
          ? value.argumentExpression.text
          : undefined
      const base = userValueOf(value.expression, depth + 1)
      if (base === undefined || name === undefined || base.kind === "missing") return base
      return sdk.member(base, name)
    }
    if (!ts.isIdentifier(value)) return undefined
    let symbol = symbolAt(value)
    for (let hops = 0; hops < 16 && symbol !== undefined; hops++) {
      const declaration: ts.Declaration | undefined = symbol.declarations?.[0]
      if (declaration === undefined) return undefined
      const specifier = moduleSpecifierOf(declaration)
      if (specifier !== undefined && isRelative(specifier)) {
        const from = declaration.getSourceFile().fileName
        const target = app.resolveModule(specifier, from)
        const wanted = path.resolve(path.dirname(from), specifier)
        if (target === undefined) {
          return isInside(wanted, app.outDir) ? { kind: "missing", specifier } : undefined
        }
        if (isInside(target, app.outDir)) {
          const name = importedNameOf(declaration)
          return name === "*" ? { kind: "module", file: target } : sdk.exported(target, name)
        }
      }
      if (ts.isVariableDeclaration(declaration) && declaration.initializer !== undefined) {
        return isProjectNode(declaration)
          ? userValueOf(declaration.initializer, depth + 1)
          : undefined
      }
      if ((symbol.flags & ts.SymbolFlags.Alias) === 0) return undefined
      const next: ts.Symbol | undefined = checker.getImmediateAliasedSymbol(symbol)
      if (next === symbol) return undefined
      symbol = next
    }
    return undefined
  }

  /** The object literal `implement` is given, directly or through a local constant. */
  const definitionOf = (
    argument: ts.Expression | undefined,
  ): ts.ObjectLiteralExpression | undefined => {
    if (argument === undefined) return undefined
    const value = unwrap(argument)
    if (ts.isObjectLiteralExpression(value)) return value
    if (!ts.isIdentifier(value)) return undefined
    const declaration = declarationsOf(symbolAt(value))[0]
    return declaration !== undefined &&
      ts.isVariableDeclaration(declaration) &&
      declaration.initializer !== undefined
      ? definitionOf(declaration.initializer)
      : undefined
  }

  /** The function a `body` property gives, or the local function whose call returns it. */
  const bodyFunctionOf = (
    property: ts.ObjectLiteralElementLike,
  ): { readonly fn: ts.Node; readonly direct: boolean } | undefined => {
    if (ts.isMethodDeclaration(property)) return { fn: property, direct: true }
    const expression = ts.isPropertyAssignment(property)
      ? unwrap(property.initializer)
      : ts.isShorthandPropertyAssignment(property)
        ? property.name
        : undefined
    if (expression === undefined) return undefined
    if (isFunctionLike(expression)) return { fn: expression, direct: true }
    if (ts.isIdentifier(expression)) {
      const fn = functionOf(expression)
      return fn === undefined ? undefined : { fn, direct: true }
    }
    if (ts.isCallExpression(expression)) {
      const callee = unwrap(expression.expression)
      const fn = ts.isIdentifier(callee)
        ? functionOf(callee)
        : ts.isPropertyAccessExpression(callee)
          ? functionOf(callee.name)
          : undefined
      return fn === undefined ? undefined : { fn, direct: false }
    }
    return undefined
  }

  /**
   * Walks everything a body reaches: its own code, every project function it names (through the
   * checker, across files), and what those reach in turn. `handles` are the symbols bound to the
   * body's `wf` (its parameter, aliases of it, parameters of helpers it is passed to).
   */
  const walkBody = (implementation: Implementation, bodyFn: ts.Node, direct: boolean): void => {
    const { owner, workflowName, use } = implementation
    const subject = `${owner}.${workflowName}`
    const handles = new Set<ts.Symbol>()
    const markerReaders = new Set<ts.Symbol>()
    const visited = new Map<ts.Node, number>()
    const queue: { readonly node: ts.Node; readonly via: readonly string[] }[] = []
    const enqueue = (node: ts.Node, via: readonly string[]) => {
      if (visited.get(node) === handles.size + markerReaders.size) return
      visited.set(node, handles.size + markerReaders.size)
      queue.push({ node, via })
    }

    const reached = (via: readonly string[]) =>
      via.length === 0
        ? `in the body of ${subject}`
        : `reached from the body of ${subject} through ${via.join(" → ")}`

    /** Binds a parameter (or binding pattern) to a handle: names it destructures are steps used. */
    const bindHandle = (name: ts.BindingName): boolean => {
      if (ts.isIdentifier(name)) {
        const symbol = symbolAt(name)
        if (symbol === undefined || handles.has(symbol)) return false
        handles.add(symbol)
        return true
      }
      let added = false
      if (ts.isObjectBindingPattern(name)) {
        for (const element of name.elements) {
          const property = element.propertyName ?? element.name
          if (ts.isIdentifier(property)) use.steps.add(property.text)
          if (
            ts.isIdentifier(property) &&
            property.text === "version" &&
            ts.isIdentifier(element.name)
          ) {
            const symbol = symbolAt(element.name)
            if (symbol !== undefined && !markerReaders.has(symbol)) {
              markerReaders.add(symbol)
              added = true
            }
          }
        }
      } else use.unknownUse = true
      return added
    }

    const readMarker = (call: ts.CallExpression) => {
      const argument = call.arguments[0]
      if (argument !== undefined && ts.isStringLiteralLike(argument)) {
        use.markers.push({ name: argument.text, node: argument })
      } else use.unknownUse = true
    }

    const isHandle = (node: ts.Node): boolean => {
      if (!ts.isIdentifier(node)) return false
      const symbol = symbolAt(node)
      return symbol !== undefined && handles.has(symbol)
    }

    /** The handle passed as an argument binds the callee's parameter at that position. */
    const passHandles = (
      call: ts.CallExpression | ts.NewExpression,
      callee: ts.Node | undefined,
      via: readonly string[],
    ) => {
      const args = call.arguments ?? []
      args.forEach((argument, index) => {
        if (!isHandle(unwrap(argument))) return
        const fn = callee !== undefined && isFunctionLike(callee) ? callee : undefined
        const parameter = fn?.parameters[index]
        if (parameter === undefined) {
          use.unknownUse = true
          return
        }
        if (bindHandle(parameter.name)) enqueue(fn!, via)
      })
    }

    const visit = (node: ts.Node, via: readonly string[]): void => {
      if (isTypeLevel(node)) return
      const source = node.getSourceFile()
      if (ts.isIdentifier(node)) {
        visitIdentifier(node, via)
        return
      }
      if (ts.isPropertyAccessExpression(node)) {
        const receiver = unwrap(node.expression)
        const member = node.name.text
        if (isHandle(receiver)) {
          use.steps.add(member)
          if (
            member === "version" &&
            ts.isCallExpression(node.parent) &&
            node.parent.expression === node
          ) {
            readMarker(node.parent)
          }
          return
        }
        const origin = receiverOrigin(node.expression)
        if (origin !== undefined) {
          const reason = memberUseReason(origin, member)
          if (reason !== undefined) {
            report(
              {
                rule: "nondeterministic-call",
                owner,
                workflow: workflowName,
                message: `${shortText(node, source)} ${reason}; it is ${reached(via)}`,
              },
              node,
            )
          } else if (runsPromise(origin, member)) {
            report(
              {
                rule: "promise-in-body",
                owner,
                workflow: workflowName,
                message: `${shortText(node, source)} waits on a plain Promise ${reached(via)}: its result is not recorded, so a replay runs it again and may get another value`,
              },
              node,
            )
          }
          if (origin.kind === "global" && !ts.isIdentifier(receiver)) return
        }
        const fn = functionOf(node.name)
        if (fn !== undefined) enqueue(fn, [...via, member])
        visit(node.expression, via)
        return
      }
      if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
        const callee = unwrap(node.expression)
        if (
          ts.isIdentifier(callee) &&
          (node.arguments === undefined || node.arguments.length === 0)
        ) {
          const origin = originOf(callee)
          const reason = origin === undefined ? undefined : dateWithoutArgumentsReason(origin)
          if (reason !== undefined) {
            report(
              {
                rule: "nondeterministic-call",
                owner,
                workflow: workflowName,
                message: `${shortText(node, source)} ${reason}; it is ${reached(via)}`,
              },
              node,
            )
          }
        }
        if (ts.isCallExpression(node) && ts.isIdentifier(callee)) {
          const symbol = symbolAt(callee)
          if (symbol !== undefined && markerReaders.has(symbol)) readMarker(node)
        }
        if (
          ts.isCallExpression(node) &&
          ts.isPropertyAccessExpression(callee) &&
          MUTATING_METHODS.has(callee.name.text)
        ) {
          const variable = moduleVariableWritten(callee.expression)
          if (variable !== undefined) reportStateWrite(node, variable, via)
        }
        const fn = ts.isIdentifier(callee)
          ? functionOf(callee)
          : ts.isPropertyAccessExpression(callee)
            ? functionOf(callee.name)
            : undefined
        const constructor =
          fn !== undefined && (ts.isClassDeclaration(fn) || ts.isClassExpression(fn))
            ? fn.members.find(ts.isConstructorDeclaration)
            : fn
        passHandles(node, constructor, [
          ...via,
          ts.isPropertyAccessExpression(callee) ? callee.name.text : shortText(callee, source),
        ])
        ts.forEachChild(node, (child) => {
          if (isHandle(child) && node.arguments?.includes(child as ts.Expression)) return
          visit(child, via)
        })
        return
      }
      if (
        ts.isAwaitExpression(node) ||
        (ts.isForOfStatement(node) && node.awaitModifier !== undefined)
      ) {
        report(
          {
            rule: "promise-in-body",
            owner,
            workflow: workflowName,
            message: `\`${shortText(node, source)}\` awaits a plain Promise ${reached(via)}: its result is not recorded, so a replay runs it again and may get another value`,
          },
          node,
        )
      }
      if (ts.isBinaryExpression(node) && isAssignment(node.operatorToken.kind)) {
        const variable = moduleVariableWritten(node.left)
        if (variable !== undefined) reportStateWrite(node, variable, via)
      }
      if (
        (ts.isPrefixUnaryExpression(node) || ts.isPostfixUnaryExpression(node)) &&
        (node.operator === ts.SyntaxKind.PlusPlusToken ||
          node.operator === ts.SyntaxKind.MinusMinusToken)
      ) {
        const variable = moduleVariableWritten(node.operand)
        if (variable !== undefined) reportStateWrite(node, variable, via)
      }
      if (ts.isDeleteExpression(node)) {
        const variable = moduleVariableWritten(node.expression)
        if (variable !== undefined) reportStateWrite(node, variable, via)
      }
      if (
        ts.isVariableDeclaration(node) &&
        node.initializer !== undefined &&
        isHandle(unwrap(node.initializer))
      ) {
        bindHandle(node.name)
        return
      }
      ts.forEachChild(node, (child) => visit(child, via))
    }

    const reportStateWrite = (
      node: ts.Node,
      variable: ts.VariableDeclaration,
      via: readonly string[],
    ) => {
      const declared = locationOf(variable)
      report(
        {
          rule: "module-state-write",
          owner,
          workflow: workflowName,
          message: `${shortText(node, node.getSourceFile())} writes ${variable.name.getText()}, a module-level variable (${declared.file}:${declared.line}:${declared.column}), ${reached(via)}: every execution in the process shares it, and a replay finds what earlier runs left`,
        },
        node,
      )
    }

    const visitIdentifier = (node: ts.Identifier, via: readonly string[]) => {
      const parent = node.parent
      if (isNameNotReference(node)) return
      if (isHandle(node)) {
        if (!ts.isShorthandPropertyAssignment(parent) && !ts.isSpreadAssignment(parent)) return
        use.unknownUse = true
        return
      }
      const origin = originOf(node)
      if (origin !== undefined) {
        const reason = directUseReason(origin)
        if (reason !== undefined) {
          report(
            {
              rule: "nondeterministic-call",
              owner,
              workflow: workflowName,
              message: `${node.text} ${reason}; it is ${reached(via)}`,
            },
            node,
          )
        }
        return
      }
      const fn = functionOf(node)
      if (fn !== undefined) enqueue(fn, [...via, node.text])
    }

    if (direct && isFunctionLike(bodyFn)) {
      const wf = bodyFn.parameters[1]
      if (wf !== undefined) bindHandle(wf.name)
    } else if (!direct) {
      // A factory's returned body is not known: what it reaches is still walked, but its use of
      // the handle cannot be followed.
      use.unknownUse = true
    }
    enqueue(bodyFn, [])
    while (queue.length > 0) {
      const { node, via } = queue.shift()!
      if (isFunctionLike(node) && node.body !== undefined) {
        for (const parameter of node.parameters) {
          if (parameter.initializer !== undefined) visit(parameter.initializer, via)
        }
        visit(node.body, via)
      } else ts.forEachChild(node, (child) => visit(child, via))
    }
  }

  const implementations: Implementation[] = []
  const analyzeImplementCall = (call: ts.CallExpression, builder: UserValue) => {
    const subjectText = shortText(call.expression, call.getSourceFile())
    if (builder.kind === "missing") {
      report(
        {
          rule: "builder-manifest-missing",
          message: `${subjectText} comes from ${builder.specifier}, which does not exist: the SDK was not generated`,
        },
        call,
      )
      return
    }
    if (builder.kind !== "workflow") return
    const loaded = manifests.find((manifest) => manifest.file === builder.manifestFile)
    const declaration =
      builder.workflow === undefined ? undefined : loaded?.manifest.workflows[builder.workflow]
    if (loaded === undefined || declaration === undefined || builder.workflow === undefined) {
      report(
        {
          rule: "builder-manifest-missing",
          message:
            loaded === undefined
              ? `${subjectText} was generated from ${builder.manifestFile ?? "a manifest"}, which is not among the manifests: the generated SDK is stale`
              : `${subjectText} was generated for workflow "${builder.workflow ?? "?"}" of ${loaded.file}, which no longer declares it: the generated SDK is stale`,
        },
        call,
      )
      return
    }
    const definition = definitionOf(call.arguments[0])
    const bodyProperty = definition?.properties.find(
      (property) =>
        property.name !== undefined &&
        (ts.isIdentifier(property.name) || ts.isStringLiteral(property.name)) &&
        property.name.text === "body",
    )
    const implementation: Implementation = {
      owner: loaded.manifest.owner,
      workflowName: builder.workflow,
      declaration,
      manifestFile: loaded.file,
      anchor: bodyProperty ?? call,
      use: { steps: new Set(), markers: [], unknownUse: false },
    }
    implementations.push(implementation)
    const body = bodyProperty === undefined ? undefined : bodyFunctionOf(bodyProperty)
    if (body === undefined) {
      implementation.use.unknownUse = true
      report(
        {
          rule: "body-not-analyzed",
          owner: implementation.owner,
          workflow: implementation.workflowName,
          message: `the body of ${implementation.owner}.${implementation.workflowName} is not a function the lint can follow, so it was not checked`,
        },
        bodyProperty ?? call,
      )
      return
    }
    walkBody(implementation, body.fn, body.direct)
  }

  for (const file of app.files) {
    const visitCalls = (node: ts.Node): void => {
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        node.expression.name.text === "implement"
      ) {
        const builder = userValueOf(node.expression.expression)
        if (builder !== undefined) analyzeImplementCall(node, builder)
      }
      ts.forEachChild(node, visitCalls)
    }
    visitCalls(file)
  }

  reportDeclaredButUnused(implementations, report, manifests)

  const suppressionFindings: LintFinding[] = []
  const suppressions = app.files.flatMap((file) => {
    const read = readSuppressions(
      path.relative(root, file.fileName).split(path.sep).join("/"),
      file.text,
    )
    suppressionFindings.push(...read.problems)
    return read.suppressions
  })
  const findings = applySuppressions([...found.values()], suppressions)
  return {
    findings: [...findings, ...suppressionFindings].sort(compareLintFindings),
    files: app.files.length,
    implementations: implementations.length,
  }
}

/** Per workflow, over every body implementing it: steps never called, markers never read or undeclared. */
const reportDeclaredButUnused = (
  implementations: readonly Implementation[],
  report: (draft: Omit<LintDraft, "location">, node: ts.Node) => void,
  manifests: readonly LoadedManifest[],
) => {
  const byWorkflow = new Map<string, Implementation[]>()
  for (const implementation of implementations) {
    const key = `${implementation.manifestFile}\0${implementation.workflowName}`
    byWorkflow.set(key, [...(byWorkflow.get(key) ?? []), implementation])
  }
  for (const group of byWorkflow.values()) {
    const first = group[0]!
    const { owner, workflowName, declaration, manifestFile } = first
    const positions = manifests.find((manifest) => manifest.file === manifestFile)?.positions
    const declaredAt = (pathInManifest: readonly string[]) => {
      const position = positions?.locate(pathInManifest)
      return position === undefined
        ? manifestFile
        : `${manifestFile}:${position.line}:${position.column}`
    }
    const markersRead = new Set(
      group.flatMap((implementation) => implementation.use.markers.map((marker) => marker.name)),
    )
    for (const implementation of group) {
      for (const marker of implementation.use.markers) {
        if (Object.hasOwn(declaration.versions, marker.name)) continue
        report(
          {
            rule: "marker-undeclared",
            owner,
            workflow: workflowName,
            marker: marker.name,
            message: `the body of ${owner}.${workflowName} reads marker "${marker.name}", which ${manifestFile} does not declare for it`,
          },
          marker.node,
        )
      }
    }
    if (group.some((implementation) => implementation.use.unknownUse)) continue
    const stepsCalled = new Set(group.flatMap((implementation) => [...implementation.use.steps]))
    for (const step of Object.keys(declaration.steps)) {
      if (stepsCalled.has(step)) continue
      report(
        {
          rule: "step-never-called",
          owner,
          workflow: workflowName,
          step,
          message: `step "${step}" of ${owner}.${workflowName} (${declaredAt(["workflows", workflowName, "steps", step])}) is declared, but no body calls it`,
        },
        first.anchor,
      )
    }
    for (const marker of Object.keys(declaration.versions)) {
      if (markersRead.has(marker)) continue
      report(
        {
          rule: "marker-never-read",
          owner,
          workflow: workflowName,
          marker,
          message: `marker "${marker}" of ${owner}.${workflowName} (${declaredAt(["workflows", workflowName, "versions", marker])}) is declared, but no body reads it`,
        },
        first.anchor,
      )
    }
  }
}

export { AppPatternsUnmatched } from "./appProgram.js"

/**
 * Loads the app's sources named by `patterns` (paths or globs) and lints them: what
 * `akter check --app` runs. Throws `AppPatternsUnmatched` when the patterns name no file to lint.
 *
 * @example
 * const { findings } = lintApp({ cwd, root, outDir, patterns: ["src/app.ts"], manifests })
 */
export const lintApp = (options: {
  readonly cwd: string
  readonly root: string
  readonly outDir: string
  readonly patterns: readonly string[]
  readonly manifests: readonly LoadedManifest[]
}): LintResult => lintImplementations(loadAppProgram(options), options.manifests)
