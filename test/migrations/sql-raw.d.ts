/** A migration's text, imported with Vite's `?raw` (test/migrations/0024_webhook_limits.test.ts). */
declare module "*.sql?raw" {
  const text: string;
  export default text;
}
