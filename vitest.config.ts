import { defineConfig } from "vitest/config"

export default defineConfig({
  // Tests run akter from its sources: "akter" resolves through the same export condition that
  // tsc (tsconfig.json) and bin/akter.js use in this repository, never to a build in dist/.
  resolve: { conditions: ["akter-source"] },
  ssr: { resolve: { conditions: ["akter-source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
})
