// Stands in for "entities" in the deployed bundle (wrangler.toml [alias]). Its only
// importer, dom-serializer (through html-to-text), uses the escape functions; the package
// index also builds the HTML entity decode/encode tables at load (~70 KB) that nothing
// reads (htmlparser2 decodes with its own copy of entities).
export * from "entities/lib/escape.js";
