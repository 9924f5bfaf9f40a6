/** A migration's text, imported with Vite's `?raw` (test/services/webhooks/migration.test.ts). */
declare module "*.sql?raw" {
  const text: string;
  export default text;
}
