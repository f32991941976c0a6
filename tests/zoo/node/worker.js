// The inbox worker, a process of its own: takes stored rows that are not
// settled, and in one transaction per row marks it processed, runs the
// business effect once and keeps the object's winner. A row whose order
// field is not a time (a poison event) is marked failed, not retried.
import { openStore } from "./store.js";
import { rank } from "./providers/hmac.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The server creates the schema; until it has, opening may fail.
let store;
while (!store) {
  store = await openStore(process.argv[2] ?? process.env.ZOO_DATABASE).catch(() => sleep(200));
}

for (;;) {
  try {
    const rows = await store.pending();
    for (const row of rows) {
      await store.settle(row, rank(row.ordered === null ? null : JSON.parse(row.ordered)));
    }
    if (rows.length === 0) await sleep(50);
  } catch (e) {
    console.error(`worker: ${e.message}`);
    await sleep(200);
  }
}
