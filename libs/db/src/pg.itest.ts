import { Client } from 'pg';
import { needServer } from '@gateway/testing';
import { openPg } from './pg';

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

needServer('PostgreSQL', PG, 5432).describe('openPg on PostgreSQL', () => {
  async function terminate(pid: number): Promise<void> {
    const c = new Client({ connectionString: PG });
    await c.connect();
    try {
      await c.query('SELECT pg_terminate_backend($1)', [pid]);
    } finally {
      await c.end();
    }
  }

  it('a connection dropped in the middle of a transaction fails that transaction, not the process, and the pool serves the next query', async () => {
    const db = openPg(PG, 'public', { max: 1 });
    try {
      let pid = 0;
      let resume!: () => void;
      const paused = new Promise<void>((r) => (resume = r));
      const tx = db.transaction(async (q) => {
        pid = (await q.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0].pid;
        await paused; // the connection is checked out and idle, as between two statements of a real transaction
        await q.query('SELECT 1');
      });
      await new Promise<void>((r) => {
        const poll = () => (pid ? r() : setTimeout(poll, 5));
        poll();
      });
      await terminate(pid);
      // Long enough for the termination to reach the client while it sits idle, checked out.
      await new Promise((r) => setTimeout(r, 200));
      resume();
      await expect(tx).rejects.toThrow();
      // With one connection in the pool, this only answers if the broken client was destroyed rather than reused.
      const [row] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      expect(row.pid).not.toBe(pid);
    } finally {
      await db.close();
    }
  });
});
