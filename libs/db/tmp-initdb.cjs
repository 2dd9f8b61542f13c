const { PGlite } = require('@electric-sql/pglite');
const fs = require('fs'), path=require('path');
(async () => {
  const t0 = performance.now(); const T = (l) => console.log(Math.round(performance.now()-t0), l);
  const dist = path.dirname(require.resolve('@electric-sql/pglite'));
  const mod = await WebAssembly.compile(fs.readFileSync(path.join(dist,'pglite.wasm'))); T('pglite.wasm compiled');
  const imod = await WebAssembly.compile(fs.readFileSync(path.join(dist,'initdb.wasm'))); T('initdb.wasm compiled');
  const pg = await PGlite.create({ wasmModule: mod, initdbWasmModule: process.env.NOI ? undefined : imod, database: 'template1' }); T('memory create (initdb)');
  const tar = await pg.dumpDataDir('none'); T('dump ' + tar.size);
  fs.writeFileSync('/tmp/fs/pristine.tar', Buffer.from(await tar.arrayBuffer()));
  await pg.close(); T('closed');
  const t1 = performance.now();
  const pg2 = await PGlite.create({ wasmModule: mod, database: 'template1', loadDataDir: new Blob([fs.readFileSync('/tmp/fs/pristine.tar')]) }); T('from tar');
  await pg2.close();
  const pg3 = await PGlite.create({ wasmModule: mod, database: 'template1', loadDataDir: new Blob([fs.readFileSync('/tmp/fs/pristine.tar')]) }); T('from tar again');
})();
