-- The footer a project's marketing mail gets when its body has no {{unsubscribeUrl}} (issue 36;
-- PATCH /project {unsubscribeFooter}): HTML of at most 2,000 characters that uses the variable.
-- NULL: the built-in footer (src/services/send/unsubscribe-footer.ts).
ALTER TABLE `projects` ADD `unsubscribe_footer` text;
