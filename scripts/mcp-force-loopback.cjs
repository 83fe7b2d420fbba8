// Preloaded with `node --require` so a Node MCP server that binds every interface (such as
// @modelcontextprotocol/server-everything's Streamable HTTP mode, which has no host option)
// listens on 127.0.0.1 only. Every TCP listen() is rewritten to host 127.0.0.1 before it
// binds; a form it does not recognize is refused, not passed on. Once listening, the address
// is checked again (the process exits 97 on anything but 127.0.0.1) and printed to stderr as
// `force-loopback: listening on 127.0.0.1:PORT`, which is how a test learns an ephemeral port
// (PORT=0).
'use strict';
const net = require('net');
const original = net.Server.prototype.listen;
net.Server.prototype.listen = function forceLoopback(...args) {
  const callbacks = args.filter((a) => typeof a === 'function');
  let options;
  if (args[0] !== null && typeof args[0] === 'object' && !(args[0] instanceof net.Server)
      && args[0].path === undefined && args[0].fd === undefined && args[0].handle === undefined
      && !('_handle' in args[0])) {
    options = { ...args[0], host: '127.0.0.1', ipv6Only: false };
  } else if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))
             || args[0] === undefined || typeof args[0] === 'function') {
    options = { port: typeof args[0] === 'function' || args[0] === undefined ? 0 : Number(args[0]),
                host: '127.0.0.1' };
  } else {
    throw new Error('force-loopback: refusing a listen() form it cannot pin to 127.0.0.1');
  }
  this.once('listening', () => {
    const a = this.address();
    if (!a || typeof a !== 'object' || a.address !== '127.0.0.1') {
      process.stderr.write(`force-loopback: bound to ${JSON.stringify(a)}, not 127.0.0.1; exiting\n`);
      process.exit(97);
    }
    process.stderr.write(`force-loopback: listening on 127.0.0.1:${a.port}\n`);
  });
  return original.call(this, options, ...callbacks);
};
