import { afterEach, expect } from "vitest";

/**
 * Problems a fake found in a request the Worker sent. A fake answers such a
 * request as the real service would (often an error the Worker retries), so
 * its finding would otherwise be lost; instead each is kept here and the
 * running test fails (test/setup.ts registers `expectNoViolations`).
 */
const violations: string[] = [];

export function reportViolation(message: string): void {
  violations.push(message);
}

/** The violations so far, removed (for tests that provoke one on purpose). */
export function takeViolations(): string[] {
  return violations.splice(0, violations.length);
}

/** Registered once for every test file: a test with a fake's violation fails, even if everything else passed. */
export function failTestsOnViolations(): void {
  afterEach(() => {
    const found = takeViolations();
    expect(found, "a fake at the HTTP boundary refused a request the Worker sent").toEqual([]);
  });
}
