import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../src/env";

// Bindings seen by tests: the Worker's own plus the migrations from vitest.config.ts.
declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
      /** migrations-data/, applied to the tests' second data shard SHARD_1 (test/setup.ts). */
      TEST_DATA_MIGRATIONS: D1Migration[];
    }
    interface GlobalProps {
      mainModule: typeof import("../src/index");
    }
  }
}
