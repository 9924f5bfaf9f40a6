CREATE TABLE `quota_checks` (
	`quota` text NOT NULL,
	`used` integer NOT NULL,
	`quota_limit` integer NOT NULL
);
