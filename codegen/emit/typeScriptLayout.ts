/**
 * Lays generated TypeScript out exactly as prettier formats it with akter's style, without parsing
 * and printing through prettier: for each construct of `typeScriptSyntax.ts` this builds the
 * document (`prettier/doc`) that prettier's printer for babel-ts builds for the same code, and
 * prettier's own document printer turns the documents into text. Parsing the printed code, attaching
 * its comments and walking its syntax tree was nine tenths of generation's time; deciding where
 * lines break is all that is left, and it is prettier's code that decides.
 *
 * Each function below follows one printer of prettier 3 (named in its comment) for the shapes the
 * emitters produce, and only those: a construct no emitter makes is refused rather than guessed.
 * A property test prints random manifests both ways and compares (`typeScriptLayout.test.ts`), and
 * the repository's own prettier must leave every generated file as it is (`generate.test.ts`).
 */
import { builders, printer, utils, type builders as DocBuilders } from "prettier/doc"
import { GENERATED_STYLE } from "./generatedStyle.js"
import { numberLiteral, propertyKey, stringLiteral } from "./literals.js"
import {
  isShorthand,
  propertyType,
  type ParameterSyntax,
  type PropertySyntax,
  type TypeMember,
  type TypeSyntax,
  type ValueSyntax,
} from "./typeScriptSyntax.js"
import type { GeneratedHeader, MethodDeclaration, Statement } from "./writer.js"
import { headerLines } from "./writer.js"

type Doc = DocBuilders.Doc

const { breakParent, conditionalGroup, hardline, ifBreak, label, line, softline } = builders
const { canBreak, willBreak } = utils

/**
 * The parts one after another. Nested lists are flattened and adjacent texts joined: the printer
 * writes texts in order either way, and has far fewer parts to walk.
 */
const concat = (...parts: Doc[]): Doc => {
  const joined: Doc[] = []
  let text = ""
  // a stack rather than a recursive closure: tsx names every closure it creates, which is slow
  const pending = parts.reverse()
  while (pending.length > 0) {
    const part = pending.pop()!
    if (typeof part === "string") text += part
    else if (Array.isArray(part))
      for (let index = part.length - 1; index >= 0; index--) pending.push(part[index]!)
    else {
      if (text !== "") joined.push(text)
      text = ""
      joined.push(part)
    }
  }
  if (text !== "") joined.push(text)
  return joined.length === 1 ? joined[0]! : joined
}

const join = (separator: Doc, parts: readonly Doc[]): Doc =>
  concat(...parts.flatMap((part, index) => (index === 0 ? [part] : [separator, part])))

// plain text has no line to break or indent: prettier's group and indents leave it as it is
const group = (contents: Doc, options?: { shouldBreak?: boolean; id?: symbol }): Doc =>
  typeof contents === "string" && options === undefined
    ? contents
    : builders.group(contents, options)
const indent = (contents: Doc): Doc =>
  typeof contents === "string" ? contents : builders.indent(contents)
const align = (width: number, contents: Doc): Doc =>
  typeof contents === "string" ? contents : builders.align(width, contents)
const indentIfBreak = (contents: Doc, options: { groupId: symbol }): Doc =>
  typeof contents === "string" ? contents : builders.indentIfBreak(contents, options)

// ---------------------------------------------------------------------------------------------
// Comments

/** A TSDoc block's lines (prettier's `printComment`): one when the text has one line. */
const commentLines = (text: string): string[] =>
  text.includes("\n")
    ? ["/**", ...text.split("\n").map((textLine) => ` * ${textLine}`.trimEnd()), " */"]
    : [`/** ${text} */`]

/** Doc text is wrapped to this width, so that a comment block stays within the line width. */
const DOCS_WIDTH = 92

/**
 * Wraps prose lines at word boundaries; list items keep their hanging indent, and the lines of an
 * `@example` are code, so they are kept as they are.
 */
const wrapDocs = (text: string, width = DOCS_WIDTH): string => {
  const lines: string[] = []
  let inExample = false
  for (const textLine of text.split("\n")) {
    if (textLine.startsWith("@")) inExample = textLine.startsWith("@example")
    if (inExample || textLine.length <= width) {
      lines.push(textLine)
      continue
    }
    const hanging = textLine.startsWith("- ") ? "  " : ""
    let current = ""
    for (const word of textLine.split(" ")) {
      if (current !== "" && current.length + 1 + word.length > width) {
        lines.push(current)
        current = `${hanging}${word}`
      } else {
        current = current === "" ? word : `${current} ${word}`
      }
    }
    lines.push(current)
  }
  return lines.join("\n")
}

/** The text of a doc comment for `docs`, wrapped, every star-slash escaped; undefined when empty. */
const docsText = (docs: string | undefined): string | undefined =>
  docs === undefined || docs.trim() === ""
    ? undefined
    : wrapDocs(docs.trim()).replaceAll("*/", "*\\/")

/**
 * Where a doc comment stands: on lines of its own before a statement or an interface member, or
 * inside an object type, where it shares the member's line when it is one line long.
 */
type CommentPlacement = "statement" | "interfaceMember" | "objectTypeMember"

/** `doc` with its leading doc comment (prettier's `printLeadingComment`). */
const withDocs = (docs: string | undefined, doc: Doc, placement: CommentPlacement): Doc => {
  const text = docsText(docs)
  if (text === undefined) return doc
  const lines = commentLines(text)
  if (placement === "objectTypeMember") {
    // the hard lines of a long block break every group around it
    return concat(join(hardline, lines), lines.length > 1 ? line : " ", doc)
  }
  // On lines of its own the block is one text with its indentation written out: nothing in it can
  // break, and the hard line after it ends the line, so it prints the same as a line per part.
  const indentation = placement === "interfaceMember" ? " ".repeat(GENERATED_STYLE.tabWidth) : ""
  return concat(lines.join(`\n${indentation}`), hardline, doc)
}

// ---------------------------------------------------------------------------------------------
// Types

/**
 * Where a type stands, as far as its layout depends on it: a union is indented under a type
 * annotation, aligned as a type argument or the right side of an alias, and parenthesised as the
 * items of an array.
 */
type TypePosition = "annotation" | "unindented" | "arrayItem"

/** prettier's `shouldHugUnionType`: one object-like member and otherwise only `null` or `void`. */
const unionHugs = (members: readonly TypeSyntax[]): boolean => {
  const objectLike = members.find((type) => type.kind === "objectType" || type.kind === "reference")
  return (
    objectLike !== undefined &&
    members.every(
      (type) =>
        type === objectLike ||
        (type.kind === "keyword" && (type.name === "null" || type.name === "void")),
    )
  )
}

/** prettier's `isSimpleType`: a keyword, a literal, or a named type without arguments. */
const isSimpleType = (type: TypeSyntax): boolean =>
  type.kind === "keyword" ||
  type.kind === "stringLiteral" ||
  (type.kind === "reference" && type.arguments.length === 0)

/** prettier's `shouldHugType`: a lone type argument printed inside `<>` without breaking. */
const hugsAsTypeArgument = (type: TypeSyntax): boolean =>
  isSimpleType(type) ||
  type.kind === "objectType" ||
  (type.kind === "union" && unionHugs(type.members))

/** prettier's `printUnionType`. */
const unionDoc = (members: readonly TypeSyntax[], position: TypePosition): Doc => {
  if (unionHugs(members)) {
    const hugged = join(
      " | ",
      members.map((member) => typeDoc(member)),
    )
    return position === "arrayItem" ? concat("(", hugged, ")") : hugged
  }
  const lines = group(
    concat(
      ...members.map((member, index) =>
        concat(index === 0 ? ifBreak("| ") : concat(line, "| "), align(2, typeDoc(member))),
      ),
    ),
  )
  switch (position) {
    case "arrayItem":
      return concat("(", group(concat(indent(concat(softline, lines)), softline)), ")")
    case "unindented":
      return lines
    case "annotation":
      return group(indent(concat(softline, lines)))
  }
}

/** prettier's `printTypeParameters` for type arguments. */
const typeArgumentsDoc = (typeArguments: readonly TypeSyntax[]): Doc => {
  if (typeArguments.length === 0) return ""
  if (typeArguments.length === 1 && hugsAsTypeArgument(typeArguments[0]!)) {
    return concat("<", typeDoc(typeArguments[0]!, "unindented"), ">")
  }
  const printed = typeArguments.map((type) => typeDoc(type, "unindented"))
  return group(
    concat("<", indent(concat(softline, join(concat(",", line), printed))), softline, ">"),
  )
}

/** `: T`, prettier's `printTypeAnnotation`. */
const annotationDoc = (type: TypeSyntax): Doc => concat(": ", typeDoc(type))

/** A property of an object type or an interface: prettier's printer of `TSPropertySignature`. */
const propertySignatureDoc = (member: PropertySyntax): Doc =>
  group(
    concat(
      "readonly ",
      propertyKey(member.name),
      member.optional ? "?" : "",
      annotationDoc(propertyType(member)),
    ),
  )

const typeMemberDoc = (member: TypeMember): Doc =>
  member.kind === "property"
    ? propertySignatureDoc(member)
    : group(
        concat(
          "readonly [",
          group(concat(indent(concat(softline, "key: string")), softline)),
          "]",
          annotationDoc(member.type),
        ),
      )

/**
 * An object type literal (prettier's class-body printer for `TSTypeLiteral`): members a line apart,
 * `;` between them while the literal is on one line.
 */
const objectTypeDoc = (members: readonly TypeMember[]): Doc => {
  if (members.length === 0) return "{}"
  const printed = members.map((member, index) => {
    const separator = index === members.length - 1 ? "" : ifBreak("", ";")
    const docs = member.kind === "property" ? member.docs : undefined
    return withDocs(docs, concat(typeMemberDoc(member), separator), "objectTypeMember")
  })
  return group(concat("{", indent(concat(line, join(line, printed))), line, "}"))
}

/** The document of a type; `position` is where it stands (an annotation unless said). */
export const typeDoc = (type: TypeSyntax, position: TypePosition = "annotation"): Doc => {
  switch (type.kind) {
    case "keyword":
      return type.name
    case "stringLiteral":
      return stringLiteral(type.value)
    case "reference":
      return concat(type.name, typeArgumentsDoc(type.arguments))
    case "union":
      return unionDoc(type.members, position)
    case "readonlyArray": {
      const items = typeDoc(type.items, "arrayItem")
      // an array of arrays needs parentheses around the inner `readonly T[]`
      return concat(
        "readonly ",
        type.items.kind === "readonlyArray" ? concat("(", items, ")") : items,
        "[]",
      )
    }
    case "objectType":
      return objectTypeDoc(type.members)
  }
}

// ---------------------------------------------------------------------------------------------
// Values

/** prettier's `isLoneShortArgument`, for the arguments the emitters pass. */
const isLoneShortArgument = (value: ValueSyntax): boolean => {
  const threshold = GENERATED_STYLE.printWidth * 0.25
  switch (value.kind) {
    case "identifier":
      return value.name.length <= threshold
    case "string":
      return stringLiteral(value.value).length <= threshold
    case "call":
      return (
        value.arguments.length === 0 &&
        value.callee.kind === "identifier" &&
        value.callee.name.length <= threshold - 2
      )
    case "number":
    case "boolean":
    case "null":
      return true
    default:
      return false
  }
}

/** prettier's `isSimpleCallArgument`. */
const isSimpleCallArgument = (value: ValueSyntax, depth = 2): boolean => {
  if (depth <= 0) return false
  const simpler = (part: ValueSyntax) => isSimpleCallArgument(part, depth - 1)
  switch (value.kind) {
    case "identifier":
    case "string":
    case "number":
    case "boolean":
    case "null":
      return true
    case "object":
      return value.properties.every((entry) => isShorthand(entry) || simpler(entry.value))
    case "array":
      return value.elements.every(simpler)
    case "call":
      return (
        isSimpleCallArgument(value.callee, depth) &&
        value.arguments.length <= depth &&
        value.arguments.every(simpler)
      )
    case "member":
      return isSimpleCallArgument(value.object, depth)
    default:
      return false
  }
}

/** prettier's `couldExpandArg`: a last argument that may break while its call stays on the line. */
const couldExpandArgument = (value: ValueSyntax): boolean =>
  (value.kind === "object" && value.properties.length > 0) ||
  (value.kind === "array" && value.elements.length > 0) ||
  (value.kind === "as" && couldExpandArgument(value.expression))

/** prettier's `printCallArguments`. */
const callArgumentsDoc = (args: readonly ValueSyntax[]): Doc => {
  if (args.length === 0) return "()"
  for (const arg of args) {
    // an arrow argument is laid out with rules (argument expansion bailouts) no emitter needs
    if (arg.kind === "arrow") throw new Error("typeScriptLayout: a function as a call argument")
  }
  const printed = args.map((arg) => valueDoc(arg))
  const separated = printed.map((doc, index) =>
    index === printed.length - 1 ? doc : concat(doc, ",", line),
  )
  const last = args.at(-1)!
  const penultimate = args.at(-2)
  if (couldExpandArgument(last) && (penultimate === undefined || penultimate.kind !== last.kind)) {
    const head = separated.slice(0, -1)
    const allBrokenOut = builders.group(
      concat("(", indent(concat(line, ...separated)), ifBreak(","), line, ")"),
      { shouldBreak: true },
    )
    if (head.some(willBreak)) return allBrokenOut
    const expanded = printed.at(-1)!
    const hugged = concat("(", ...head, builders.group(expanded, { shouldBreak: true }), ")")
    return willBreak(expanded)
      ? concat(breakParent, conditionalGroup([hugged, allBrokenOut]))
      : conditionalGroup([concat("(", ...head, expanded, ")"), hugged, allBrokenOut])
  }
  return group(concat("(", indent(concat(softline, ...separated)), ifBreak(","), softline, ")"), {
    shouldBreak: separated.some(willBreak),
  })
}

/** One link of a member chain, as prettier's `printMemberChain` collects them. */
interface ChainLink {
  readonly value: ValueSyntax
  readonly printed: Doc
}

const isFactory = (name: string): boolean => /^[A-Z]|^[$_]+$/.test(name)

const callLink = (call: Extract<ValueSyntax, { kind: "call" }>): ChainLink => ({
  value: call,
  printed: concat(typeArgumentsDoc(call.typeArguments), callArgumentsDoc(call.arguments)),
})

/**
 * prettier's `printMemberChain`, for calls on a member (`z.array(SkuSchema).optional()`): short
 * chains stay one piece, longer ones may break before each `.` once they do not fit.
 */
const memberChainDoc = (chain: Extract<ValueSyntax, { kind: "call" }>): Doc => {
  const links: ChainLink[] = [callLink(chain)]
  for (let part = chain.callee; ;) {
    if (part.kind === "call" && (part.callee.kind === "member" || part.callee.kind === "call")) {
      links.push(callLink(part))
      part = part.callee
    } else if (part.kind === "member") {
      links.push({ value: part, printed: `.${part.property}` })
      part = part.object
    } else {
      links.push({ value: part, printed: valueDoc(part) })
      break
    }
  }
  links.reverse()
  // the first group: the head, the calls right after it, and all but the last of its members
  let index = 1
  while (index < links.length && links[index]!.value.kind === "call") index++
  if (links[0]!.value.kind !== "call") {
    while (
      index + 1 < links.length &&
      links[index]!.value.kind === "member" &&
      links[index + 1]!.value.kind === "member"
    ) {
      index++
    }
  }
  const groups: ChainLink[][] = [links.slice(0, index)]
  // then one group per run of members followed by its calls
  let current: ChainLink[] = []
  let seenCall = false
  for (; index < links.length; index++) {
    const link = links[index]!
    if (seenCall && link.value.kind === "member") {
      groups.push(current)
      current = []
      seenCall = false
    }
    if (link.value.kind === "call") seenCall = true
    current.push(link)
  }
  if (current.length > 0) groups.push(current)

  const head = groups[0]!
  const first = head[0]!.value
  const lastOfHead = head.at(-1)!.value
  const shouldMerge =
    groups.length >= 2 &&
    (head.length === 1
      ? first.kind === "identifier" && isFactory(first.name)
      : lastOfHead.kind === "member" && isFactory(lastOfHead.property))
  const printedGroups = groups.map((links) => concat(...links.map((link) => link.printed)))
  const oneLine = concat(...printedGroups)
  const cutoff = shouldMerge ? 3 : 2
  if (groups.length <= cutoff) return group(oneLine)

  const rest = printedGroups.slice(shouldMerge ? 2 : 1)
  const expanded = concat(
    printedGroups[0]!,
    shouldMerge ? printedGroups[1]! : "",
    indent(concat(hardline, join(hardline, rest))),
  )
  const calls = links.flatMap((link) => (link.value.kind === "call" ? [link.value] : []))
  const chainBreaks =
    (calls.length > 2 &&
      calls.some((call) => !call.arguments.every((arg) => isSimpleCallArgument(arg)))) ||
    printedGroups.slice(0, -1).some(willBreak)
  return label(
    { memberChain: true },
    chainBreaks
      ? group(expanded)
      : concat(willBreak(oneLine) ? breakParent : "", conditionalGroup([oneLine, expanded])),
  )
}

/** prettier's printer of `ObjectExpression`. */
const objectDoc = (value: Extract<ValueSyntax, { kind: "object" }>): Doc => {
  if (value.properties.length === 0) return "{}"
  const properties = value.properties.map((entry, index) => {
    const printed = isShorthand(entry)
      ? valueDoc(entry.value)
      : assignmentDoc(propertyKey(entry.key), ":", { value: entry.value }, "property")
    return index === 0 ? printed : concat(",", line, printed)
  })
  return group(concat("{", indent(concat(line, ...properties)), ifBreak(","), line, "}"))
}

/** How many members an object or elements an array has. */
const sizeOf = (element: ValueSyntax): number =>
  element.kind === "object"
    ? element.properties.length
    : element.kind === "array"
      ? element.elements.length
      : 0

/** prettier's `printArray`, for arrays of strings, schemas and references. */
const arrayDoc = (value: Extract<ValueSyntax, { kind: "array" }>): Doc => {
  const { elements } = value
  if (elements.length === 0) return "[]"
  if (elements.every((element) => element.kind === "number")) {
    // prettier fills number lists, as many to a line as fit; no emitter prints one
    throw new Error("typeScriptLayout: an array of numbers")
  }
  // prettier's rule for a list of records or of tuples: one per line
  const shouldBreak =
    elements.length > 1 &&
    elements.every(
      (element, index) =>
        (element.kind === "object" || element.kind === "array") &&
        (index === elements.length - 1 || elements[index + 1]!.kind === element.kind) &&
        sizeOf(element) > 1,
    )
  const printed = join(
    concat(",", line),
    elements.map((element) => group(valueDoc(element))),
  )
  return builders.group(
    concat("[", indent(concat(softline, printed, ifBreak(","))), softline, "]"),
    { shouldBreak },
  )
}

/** prettier's `printFunctionParameters` (no parameter is an object type, so none hugs). */
const parametersDoc = (parameters: readonly ParameterSyntax[]): Doc => {
  if (parameters.length === 0) return "()"
  const printed = parameters.map((parameter) =>
    concat(parameter.name, parameter.optional === true ? "?" : "", annotationDoc(parameter.type)),
  )
  return concat(
    "(",
    indent(concat(softline, join(concat(",", line), printed))),
    ifBreak(","),
    softline,
    ")",
  )
}

/**
 * prettier's `printArrowFunction` for an arrow whose body is a name or a call: the body moves to
 * the next line when the arrow does not fit.
 */
const arrowDoc = (arrow: Extract<ValueSyntax, { kind: "arrow" }>): Doc => {
  const signature = group(
    concat(
      parametersDoc(arrow.parameters),
      arrow.returns === undefined ? "" : annotationDoc(arrow.returns),
    ),
  )
  const { body } = arrow
  if (body.kind === "arrow" || body.kind === "object" || body.kind === "array") {
    // these stay on the arrow's line (an object in parentheses), or chain; no emitter prints one
    throw new Error(`typeScriptLayout: an arrow returning an ${body.kind}`)
  }
  return group(concat(group(signature), " =>", group(indent(concat(line, valueDoc(body))))))
}

/** The document of an expression. */
export const valueDoc = (value: ValueSyntax): Doc => {
  switch (value.kind) {
    case "identifier":
      return value.name
    case "string":
      return stringLiteral(value.value)
    case "number":
      return numberLiteral(value.value)
    case "boolean":
      return String(value.value)
    case "null":
      return "null"
    case "member":
      if (value.object.kind !== "identifier") {
        // prettier may break before the `.` of a longer member path; no emitter prints one
        throw new Error("typeScriptLayout: a member of something other than a name")
      }
      return `${value.object.name}.${value.property}`
    case "call":
      return value.callee.kind === "member"
        ? memberChainDoc(value)
        : concat(
            valueDoc(value.callee),
            typeArgumentsDoc(value.typeArguments),
            callArgumentsDoc(value.arguments),
          )
    case "object":
      return objectDoc(value)
    case "array":
      return arrayDoc(value)
    case "arrow":
      return arrowDoc(value)
    case "as":
      return concat(valueDoc(value.expression), " as ", typeDoc(value.type))
  }
}

// ---------------------------------------------------------------------------------------------
// Assignments

/** prettier's layouts of `left = right`, `key: value` and `type X = T`. */
type AssignmentLayout =
  "break-after-operator" | "never-break-after-operator" | "fluid" | "break-lhs"

type AssignmentRight = { readonly value: ValueSyntax } | { readonly type: TypeSyntax }

const isMemberChain = (doc: Doc): boolean =>
  typeof doc === "object" && "type" in doc && doc.type === "label"

/**
 * prettier's `isPoorlyBreakableMemberOrCallChain`: `z.string()`, `z.array(SkuSchema)`: a chain of
 * calls without arguments or with one short argument, which reads better moved whole to the next
 * line than broken. `printed` is the value's document, when it has been made already.
 */
const isPoorlyBreakableChain = (value: ValueSyntax, printed?: Doc, deep = false): boolean => {
  switch (value.kind) {
    case "call": {
      const args = value.arguments
      if (!(args.length === 0 || (args.length === 1 && isLoneShortArgument(args[0]!)))) return false
      const typeArguments = value.typeArguments
      if (
        typeArguments.length > 1 ||
        (typeArguments.length === 1 &&
          (typeArguments[0]!.kind === "union" || typeArguments[0]!.kind === "objectType")) ||
        willBreak(typeArgumentsDoc(typeArguments)) ||
        isMemberChain(printed ?? valueDoc(value))
      ) {
        return false
      }
      return isPoorlyBreakableChain(value.callee, undefined, true)
    }
    case "member":
      return isPoorlyBreakableChain(value.object, undefined, true)
    case "identifier":
      return deep
    default:
      return false
  }
}

/** prettier's `hasComplexTypeAnnotation`: `const x: A<B<C>, D> = …` breaks its left side first. */
const hasComplexTypeAnnotation = (type: TypeSyntax | undefined): boolean =>
  type?.kind === "reference" &&
  type.arguments.length > 1 &&
  type.arguments.some((argument) => argument.kind === "reference" && argument.arguments.length > 0)

/** prettier's `chooseLayout`. */
const chooseLayout = (
  left: Doc,
  right: AssignmentRight,
  rightDoc: Doc,
  kind: "declarator" | "property" | "typeAlias",
  declaredType?: TypeSyntax,
): AssignmentLayout => {
  if ("type" in right) {
    return right.type.kind === "union" && !unionHugs(right.type.members)
      ? "break-after-operator"
      : "fluid"
  }
  const { value } = right
  const leftCanBreak = typeof left !== "string" && canBreak(left)
  if (
    kind === "declarator" &&
    (hasComplexTypeAnnotation(declaredType) || (value.kind === "arrow" && leftCanBreak))
  ) {
    return "break-lhs"
  }
  // a key shorter than the indentation it would save is not worth a line break
  const hasShortKey =
    kind === "property" && typeof left === "string" && left.length < GENERATED_STYLE.tabWidth + 3
  if (!hasShortKey && (value.kind === "string" || isPoorlyBreakableChain(value, rightDoc))) {
    return "break-after-operator"
  }
  if (!leftCanBreak && (hasShortKey || value.kind === "boolean" || value.kind === "number")) {
    return "never-break-after-operator"
  }
  return "fluid"
}

/** prettier's `printAssignment`. */
const assignmentDoc = (
  left: Doc,
  operator: string,
  right: AssignmentRight,
  kind: "declarator" | "property" | "typeAlias",
  declaredType?: TypeSyntax,
): Doc => {
  const valueDocument = "value" in right ? valueDoc(right.value) : ""
  const layout = chooseLayout(left, right, valueDocument, kind, declaredType)
  const rightDoc =
    "value" in right
      ? valueDocument
      : typeDoc(right.type, layout === "break-after-operator" ? "unindented" : "annotation")
  switch (layout) {
    case "break-after-operator":
      return group(concat(group(left), operator, group(indent(concat(line, rightDoc)))))
    case "never-break-after-operator":
      return group(concat(group(left), operator, " ", rightDoc))
    case "fluid": {
      const groupId = Symbol("assignment")
      return group(
        concat(
          group(left),
          operator,
          builders.group(builders.indent(line), { id: groupId }),
          indentIfBreak(rightDoc, { groupId }),
        ),
      )
    }
    case "break-lhs":
      return group(concat(left, operator, " ", group(rightDoc)))
  }
}

// ---------------------------------------------------------------------------------------------
// Statements

/** prettier's `printModuleSpecifiers`: braces that break only for more than one name. */
const specifiersDoc = (names: readonly string[]): Doc =>
  names.length > 1
    ? group(
        concat("{", indent(concat(line, join(concat(",", line), names))), ifBreak(","), line, "}"),
      )
    : `{ ${names[0]!} }`

/** prettier's printer of `TSMethodSignature`. */
const methodDoc = (method: MethodDeclaration): Doc => {
  const parameters = parametersDoc(method.parameters)
  const returns = annotationDoc(method.returns)
  const groupParameters =
    method.parameters.length === 1 && (method.returns.kind === "objectType" || willBreak(returns))
  return group(
    concat(
      propertyKey(method.name),
      groupParameters ? group(parameters) : parameters,
      group(returns),
    ),
  )
}

/** The declaration itself, without its doc comment. */
const declarationDoc = (statement: Statement): Doc => {
  switch (statement.kind) {
    case "import": {
      const names = statement.names.map(({ name, alias }) =>
        alias === undefined ? name : `${name} as ${alias}`,
      )
      return concat(
        statement.typeOnly ? "import type " : "import ",
        specifiersDoc(names),
        ` from ${stringLiteral(statement.from)}`,
      )
    }
    case "importJson":
      return `import ${statement.local} from ${stringLiteral(statement.from)} with { type: "json" }`
    case "exportFrom":
      return concat(
        statement.typeOnly ? "export type " : "export ",
        statement.names === undefined ? "*" : specifiersDoc(statement.names),
        statement.from === undefined ? "" : ` from ${stringLiteral(statement.from)}`,
      )
    case "typeAlias":
      return concat(
        "export ",
        assignmentDoc(`type ${statement.name}`, " =", { type: statement.type }, "typeAlias"),
      )
    case "interface": {
      const members = [
        ...statement.properties.map((member) =>
          withDocs(member.docs, propertySignatureDoc(member), "interfaceMember"),
        ),
        ...statement.methods.map((method) =>
          withDocs(method.docs, methodDoc(method), "interfaceMember"),
        ),
      ]
      return concat(
        "export interface ",
        statement.name,
        statement.extends === undefined ? "" : concat(" extends ", typeDoc(statement.extends)),
        " ",
        members.length === 0
          ? "{}"
          : concat("{", indent(concat(hardline, join(hardline, members))), hardline, "}"),
      )
    }
    case "const": {
      const left =
        statement.type === undefined
          ? statement.name
          : concat(statement.name, annotationDoc(statement.type))
      const declaration = group(
        concat(
          "const ",
          assignmentDoc(left, " =", { value: statement.value }, "declarator", statement.type),
        ),
      )
      return statement.exported ? concat("export ", declaration) : declaration
    }
    case "class":
      return concat(
        `export class ${statement.name} extends `,
        valueDoc(statement.extends.expression),
        typeArgumentsDoc(statement.extends.typeArguments),
        " {}",
      )
  }
}

const statementDoc = (statement: Statement): Doc =>
  "docs" in statement
    ? withDocs(statement.docs, declarationDoc(statement), "statement")
    : declarationDoc(statement)

/**
 * The document of a whole module: the header, then its statement groups a blank line apart.
 * Printed at an infinite width it is the module on as few lines as its syntax allows, which is
 * what prettier is given in the layout test.
 */
export const moduleDoc = (
  header: GeneratedHeader,
  statementGroups: readonly (readonly Statement[])[],
): Doc => {
  const [first, second] = headerLines(header)
  return concat(
    `// ${first}`,
    hardline,
    `// ${second}`,
    hardline,
    hardline,
    join(
      concat(hardline, hardline),
      statementGroups.map((statements) => join(hardline, statements.map(statementDoc))),
    ),
    hardline,
  )
}

/**
 * Prints a document at akter's line width, or at another one: at `Infinity` every group stays on
 * one line, which is the code as prettier would be given it.
 */
export const printDoc = (doc: Doc, width: number = GENERATED_STYLE.printWidth): string =>
  printer.printDocToString(doc, {
    printWidth: width,
    tabWidth: GENERATED_STYLE.tabWidth,
    useTabs: GENERATED_STYLE.useTabs,
  }).formatted
