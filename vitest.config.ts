import { defineConfig } from "vitest/config"

/**
 * Two groups, one after the other. The first runs two files at a time: suites that check code,
 * manifests and generated files in the test's own process (and the CLI's short-lived commands),
 * and suites whose runners and processes are awaited through the database with minutes of margin
 * (migrations, retention, tenants, telemetry, deploys, start-up checks) — on two cores one file's
 * waits are the other's compute. The second runs one file at a time: suites that restart or pause
 * databases, kill runners on a schedule, time wake-ups, or drive a browser or an install, whose
 * deadlines must not move with a neighbour's load.
 */
const twoAtATime = [
  "test/*.test.ts",
  "test/cli/**/*.test.ts",
  "test/codegen/**/*.test.ts",
  "test/compatibility/**/*.test.ts",
  "test/hash/**/*.test.ts",
  "test/hostile/**/*.test.ts",
  "test/implementationLint/**/*.test.ts",
  "test/inspect/**/*.test.ts",
  "test/manifest/**/*.test.ts",
  "test/stepKinds/**/*.test.ts",
  "test/migrations/**/*.test.ts",
  "test/retention/**/*.test.ts",
  "test/tenants/**/*.test.ts",
  "test/observability/**/*.test.ts",
  "test/deploy/**/*.test.ts",
  "test/startup/**/*.test.ts",
]

export default defineConfig({
  // Tests run akter from its sources: "akter" resolves through the same export condition that
  // tsc (tsconfig.json) and bin/akter.js use in this repository, never to a build in dist/.
  resolve: { conditions: ["akter-source"] },
  ssr: { resolve: { conditions: ["akter-source"] } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    projects: [
      {
        extends: true,
        test: {
          name: "two-at-a-time",
          include: twoAtATime,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "one-at-a-time",
          include: ["test/**/*.test.ts"],
          exclude: twoAtATime,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
})
