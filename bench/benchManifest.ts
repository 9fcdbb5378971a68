/**
 * The manifest akter's side of the benchmarks runs: one owner type whose workflows are the issue's
 * shapes. It is built as YAML text (the 200-activity workflow would be a long file to keep by hand)
 * and loaded the way the generator loads manifests, so the registrations are the real ones.
 */
import { registrationFromYaml } from "../test/support/registrationFromYaml.js"
import { SHAPES, stepName } from "./shapes.js"

/** Workflow names by activity count: `seq3`, `seq20`, `seq200`. */
export const sequentialWorkflow = (steps: number) => `seq${steps}`

export const SEQUENTIAL_LENGTHS = [
  ...new Set<number>([3, SHAPES.c.short, SHAPES.c.long, ...SHAPES.g.steps]),
].sort((a, b) => a - b)

const sequential = (steps: number) => [
  `  ${sequentialWorkflow(steps)}:`,
  "    input: { n: integer }",
  "    output: { n: integer }",
  "    steps:",
  ...Array.from(
    { length: steps },
    (_, index) =>
      `      ${stepName(index)}: { kind: activity, input: { n: integer }, output: { n: integer } }`,
  ),
]

/** The start steps of `fanout`: `c1` … `c1000`, each starting one child. */
export const childStep = (index: number) => `c${index + 1}`

export const benchManifestYaml = (): string =>
  [
    "akter: 1",
    "owner: Bench",
    "description: The workflow shapes of the benchmarks.",
    "events:",
    "  Poke: { n: integer }",
    "workflows:",
    ...SEQUENTIAL_LENGTHS.flatMap(sequential),
    "  wake:",
    "    description: Parks on an event, then returns (shape d).",
    "    input: { n: integer }",
    "    steps:",
    "      poked: { kind: wait, event: Poke }",
    "  nap:",
    "    description: One durable sleep (shape e).",
    "    input: { n: integer }",
    "    steps:",
    `      nap: { kind: sleep, duration: ${SHAPES.e.sleepMs}ms }`,
    "  fanout:",
    `    description: Starts the first n of its ${SHAPES.i.children} children and awaits them all (shape i).`,
    "    input: { n: integer }",
    "    steps:",
    ...Array.from(
      { length: SHAPES.i.children },
      (_, index) => `      ${childStep(index)}: { kind: start, workflow: child, await: true }`,
    ),
    "  child:",
    "    description: One activity, awaited by fanout (shape i).",
    "    input: { n: integer }",
    "    output: { n: integer }",
    "    steps:",
    "      work: { kind: activity, input: { n: integer }, output: { n: integer } }",
    "  parked:",
    "    description: Parks on an event that never comes (shape f).",
    "    input: { n: integer }",
    "    steps:",
    "      poked: { kind: wait, event: Poke }",
    "",
  ].join("\n")

export const benchRegistration = () =>
  registrationFromYaml(benchManifestYaml(), "bench/manifests/bench.yaml")
