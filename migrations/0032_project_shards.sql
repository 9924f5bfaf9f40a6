-- Issue 34: projects on D1 shards. The control database (DB) maps each project to the data
-- shard that holds its rows (src/db/shards.ts); a project without a row is on shard 0 (DB
-- itself), so every project of an install from before keeps working as it is. moving_to is
-- set while `npm run project -- move` copies the project to another shard.
CREATE TABLE project_shards (
  project_id TEXT PRIMARY KEY NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  shard INTEGER NOT NULL DEFAULT 0,
  moving_to INTEGER,
  moved_at INTEGER,
  created_at INTEGER NOT NULL DEFAULT (unixepoch('subsec') * 1000)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX project_shards_shard ON project_shards (shard);
