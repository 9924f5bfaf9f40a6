import type { ComponentChildren } from "preact";
import { type Item, type List, type ListParams, type ListPath, useList } from "../api/lists";
import { Link } from "../router";
import { Loading, Page } from "./page";

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
  /** The cell links to the row's own page. */
  link?: boolean;
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

/** A list as a table: a column's `cell` draws a row's cell; `link` columns link to `href(row)`. */
export function DataTable<T>(props: { list: List<T>; columns: Column<T>[]; empty: string; href?: (row: T) => string }) {
  const { columns, href } = props;
  return (
    <ListBody list={props.list} empty={props.empty}>
      {(items) => (
        <table>
          <thead>
            <tr>
              {columns.map((c) => (
                <th scope="col">{c.header}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {items.map((row) => (
              <tr>
                {columns.map((c) => (
                  <td>{c.link && href ? <Link href={href(row)}>{c.cell(row)}</Link> : c.cell(row)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </ListBody>
  );
}

/**
 * A list page, named by its path as the navigation names it ("/campaigns": Campaigns): a "New campaign" link to
 * `path/new` (`create`), what goes above the list (`children`: filters, forms), the total (`count`: "contacts"),
 * and the table, whose `link` columns go to `path/<id>`; `empty` says there is nothing ("No campaigns yet.").
 */
export function ListPage<P extends ListPath>(props: {
  path: P;
  params?: ListParams<P>;
  columns: Column<Item<P>>[];
  empty?: string;
  create?: boolean;
  /** Instead of the "New …" link. */
  actions?: ComponentChildren;
  count?: string;
  children?: ComponentChildren;
}) {
  // Only paths without path parameters have list pages, so `params` may be left out.
  const list = (useList as (path: P, params?: ListParams<P>) => List<Item<P>>)(props.path, props.params);
  const name = props.path.slice(1);
  const create = props.create && (
    <Link class="button primary" href={`${props.path}/new`}>
      New {name.slice(0, -1)}
    </Link>
  );
  return (
    <Page title={name[0].toUpperCase() + name.slice(1)} actions={props.actions ?? create}>
      {props.children}
      {props.count && list.total !== undefined && (
        <p>
          {list.total} {props.count}
        </p>
      )}
      <DataTable list={list} columns={props.columns} empty={props.empty ?? `No ${name} yet.`} href={(row) => `${props.path}/${(row as { id: string }).id}`} />
    </Page>
  );
}
