/**
 * The style of every generated file, whatever the project around it uses, in prettier's option
 * names: the layouts of `typeScriptLayout.ts` and `jsonLayout.ts` print it, and the tests hold
 * them to what prettier prints with these options.
 */
import type { Options } from "prettier"

export const GENERATED_STYLE = {
  printWidth: 100,
  tabWidth: 2,
  useTabs: false,
  semi: false,
  singleQuote: false,
  quoteProps: "as-needed",
  trailingComma: "all",
  bracketSpacing: true,
  arrowParens: "always",
  endOfLine: "lf",
  proseWrap: "preserve",
  objectWrap: "preserve",
} as const satisfies Options
