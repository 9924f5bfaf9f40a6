import type { ComponentChildren } from "preact";
import type { List } from "../api/lists";
import { Loading } from "./page";

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
}

/** "Load more" under a keyset-paginated list. */
function More(props: { list: List<unknown> }) {
  const { list } = props;
  if (!list.hasMore) return null;
  return (
    <button type="button" class="more" disabled={list.loading} onClick={list.more}>
      Load more
    </button>
  );
}

/** A list's loading state or error, `empty` when it has no items, its items as `children` draws them, and "Load more". */
export function ListBody<T>(props: { list: List<T>; empty: string; children: (items: T[]) => ComponentChildren }) {
  const { list } = props;
  return (
    <>
      <Loading state={list} />
      {!list.loading && !list.error && list.items.length === 0 && <p>{props.empty}</p>}
      {list.items.length > 0 && props.children(list.items)}
      <More list={list} />
    </>
  );
}

/** A list as a table: a column's `cell` draws a row's cell. */
export function DataTable<T>(props: { list: List<T>; columns: Column<T>[]; empty: string }) {
  return (
    <ListBody list={props.list} empty={props.empty}>
      {(items) => (
        <table>
          <thead>
            <tr>
              {props.columns.map((c) => (
                <th scope="col">{c.header}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {items.map((row) => (
              <tr>
                {props.columns.map((c) => (
                  <td>{c.cell(row)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </ListBody>
  );
}
