/** Text with LIKE's own characters (%, _ and \) escaped, for `LIKE ? ESCAPE '\'`. */
export const escapeLike = (text: string) => text.replace(/[\\%_]/g, (ch) => `\\${ch}`);

/** LIKE pattern for "contains": the value's own %, _ and \ match literally. */
export const likeContains = (text: string) => `%${escapeLike(text)}%`;
