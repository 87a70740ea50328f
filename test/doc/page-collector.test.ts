// Tests the listing's page collector against a plain sort: the same pages and tokens in both orders, every row once across pages, and never more than a page kept.
import t from 'tap';
import type { AnnotationRecord } from '../../src/doc/annotations/model.js';
import { PageCollector, type Order, type Row } from '../../src/doc/annotations/query.js';

/** A deterministic stream of numbers in [0, 1) (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Rows with many ties: lastUpdated from 10 values, documents from 5, so the tie-breaks decide most places. */
function rows(count: number, seed: number): Row[] {
  const next = random(seed);
  return Array.from({ length: count }, (_, i) => ({
    documentId: `doc-${Math.floor(next() * 5)}`,
    // The collector reads only the sort fields of a record.
    record: { annotationId: `a-${i}`, lastUpdated: 1_000 + Math.floor(next() * 10) } as unknown as AnnotationRecord,
  }));
}

/** The listing's order, written out plainly: lastUpdated, then documentId, then annotationId. */
function reference(all: readonly Row[], order: Order): string[] {
  const sign = order === 'asc' ? 1 : -1;
  const compare = (a: Row, b: Row): number =>
    a.record.lastUpdated !== b.record.lastUpdated ? a.record.lastUpdated - b.record.lastUpdated : a.documentId !== b.documentId ? (a.documentId < b.documentId ? -1 : 1) : a.record.annotationId < b.record.annotationId ? -1 : a.record.annotationId > b.record.annotationId ? 1 : 0;
  return [...all].sort((a, b) => sign * compare(a, b)).map((row) => `${row.documentId}/${row.record.annotationId}`);
}

/** Pages through `all` with the collector, feeding the rows in their given order each time. */
function pages(all: readonly Row[], order: Order, pageSize: number): { ids: string[]; pages: number; mostKept: number } {
  const ids: string[] = [];
  let token: string | undefined;
  let count = 0;
  let mostKept = 0;
  do {
    const collector = new PageCollector(order, pageSize, token);
    for (const row of all) {
      collector.add(row);
      mostKept = Math.max(mostKept, collector.kept);
    }
    const page = collector.page();
    ids.push(...page.rows.map((row) => `${row.documentId}/${row.record.annotationId}`));
    token = page.nextPageToken;
    count++;
    if (token !== undefined && page.rows.length !== pageSize) throw new Error('a page with a token must be full');
  } while (token !== undefined);
  return { ids, pages: count, mostKept };
}

t.test('paging with the collector gives the plain sort, in both orders and at every page size', async (t) => {
  for (const [count, seed] of [[0, 1], [1, 2], [57, 3], [500, 4]] as const) {
    const all = rows(count, seed);
    for (const order of ['asc', 'desc'] as const) {
      for (const pageSize of [1, 7, 50, 1000]) {
        const got = pages(all, order, pageSize);
        t.same(got.ids, reference(all, order), `${count} rows, ${order}, pages of ${pageSize}`);
        t.equal(got.pages, Math.max(1, Math.ceil(count / pageSize)), 'no empty last page');
        t.ok(got.mostKept <= pageSize + 1, `never more than a page and one kept (${got.mostKept})`);
      }
    }
  }
});

t.test('a page after the last row is empty; a token of the other order or not of this server is refused', async (t) => {
  const all = rows(20, 5);
  const first = new PageCollector('desc', 20, undefined);
  for (const row of all) first.add(row);
  t.equal(first.page().nextPageToken, undefined, 'one full page of all the rows carries no token');
  const twoPages = new PageCollector('desc', 10, undefined);
  for (const row of all) twoPages.add(row);
  const token = twoPages.page().nextPageToken;
  t.type(token, 'string');
  t.throws(() => new PageCollector('asc', 10, token), /issued for order "desc"/);
  t.throws(() => new PageCollector('desc', 10, 'not-a-token'), /not a token this server issued/);
});
