/**
 * What the README section tests share: the fenced blocks of a section, picked by a word of their
 * info string (```` ```ts retries file=src/app.ts ````), and the compiler options a project linked
 * to this checkout type-checks a section's code with.
 */

export interface SectionBlock {
  readonly language: string
  /** `file=PATH` of the info string: the block is written there. */
  readonly file: string | undefined
  readonly text: string
  /** 1-based line of the opening fence, for failure messages. */
  readonly line: number
}

/** The README's fenced blocks whose info string carries one of `tags`, in order. */
export const sectionBlocks = (markdown: string, tags: readonly string[]): SectionBlock[] => {
  const blocks: SectionBlock[] = []
  const lines = markdown.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const open = /^```(\w+)\s+(.*)$/.exec(lines[index]!)
    if (open === null || !open[2]!.split(/\s+/).some((word) => tags.includes(word))) continue
    const body: string[] = []
    let end = index + 1
    while (end < lines.length && lines[end] !== "```") body.push(lines[end++]!)
    blocks.push({
      language: open[1]!,
      file: /(?:^|\s)file=(\S+)/.exec(open[2]!)?.[1],
      text: `${body.join("\n")}\n`,
      line: index + 1,
    })
    index = end
  }
  return blocks
}

/**
 * A strict tsconfig for a project whose `akter` links to this checkout: types come from the sources
 * through the `akter-source` condition (there is no dist/ until `npm run build`).
 */
export const linkedProjectTsconfig = (include: readonly string[]) => ({
  compilerOptions: {
    target: "es2023",
    lib: ["es2023"],
    module: "nodenext",
    moduleResolution: "nodenext",
    customConditions: ["akter-source"],
    types: ["node"],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    verbatimModuleSyntax: true,
    skipLibCheck: true,
    noEmit: true,
  },
  include: [...include],
})
