import type { WorkflowStep } from "cloudflare:workers";
import { shardEnv } from "../db/shards";
import type { Env } from "../env";
import { routeOfWork } from "../services/shards/moving";

/**
 * A workflow execution lives for days and its project may move to another shard meanwhile
 * (src/entrypoints/project-move.ts); an instance that waited in memory would go on with the
 * shard it started on. So an execution runs with an env that is its project's shard env as of
 * the last durable step (the route cache: no read per step in the common case), and a step
 * that comes while the project is moving first sleeps until the move ends.
 */
export async function followingShard(base: Env, params: { projectId: string }, step: WorkflowStep): Promise<{ env: Env; step: WorkflowStep }> {
  let current = shardEnv(base, (await routeOfWork(base, params)).shard);
  // `DB` and every other field are the current shard env's, read at each access.
  const env = new Proxy(base, { get: (_target, key) => Reflect.get(current, key) }) as Env;

  const follow = async (name: string) => {
    let route = await routeOfWork(base, params);
    for (let wait = 1; route.held; wait++) {
      await step.sleep(`${name}: wait for the project's move #${wait}`, "30 seconds");
      route = await routeOfWork(base, params);
    }
    current = shardEnv(base, route.shard);
  };
  const following = {
    do: async (name: string, ...rest: unknown[]) => {
      await follow(name);
      return (step.do as (...args: unknown[]) => Promise<unknown>)(name, ...rest);
    },
    sleep: (name: string, duration: WorkflowSleepDuration) => step.sleep(name, duration),
    sleepUntil: (name: string, timestamp: Date | number) => step.sleepUntil(name, timestamp),
    waitForEvent: (name: string, options: Parameters<WorkflowStep["waitForEvent"]>[1]) => step.waitForEvent(name, options),
  } as unknown as WorkflowStep;
  return { env, step: following };
}
