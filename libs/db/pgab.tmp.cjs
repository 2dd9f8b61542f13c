const { PGlite } = require('@electric-sql/pglite');
(async () => {
  const mb = (x) => (x / 1048576).toFixed(1);
  const show = (l) => { const m = process.memoryUsage(); console.log(l, 'ab', mb(m.arrayBuffers), 'ext', mb(m.external), 'rss', mb(m.rss)); };
  const sp = [...PGlite.defaultStartParams.filter(p=>p!=='-F'), '-c', 'shared_buffers=16MB'];
  global.gc(); show('before');
  const a = await PGlite.create({ dataDir: '/tmp/pgx1', startParams: sp });
  global.gc(); show('one');
  const b = await PGlite.create({ dataDir: '/tmp/pgx2', startParams: sp });
  global.gc(); show('two');
  for (let i=0;i<200;i++) { await a.query('select $1::int', [i]); await b.query('select 1'); }
  global.gc(); show('after queries');
})();
