// The test push service: web-push-testing's express app (subscribe, notify with VAPID checks
// and aes128gcm/aesgcm decryption, expire, get-notifications) served over TLS instead of
// the plain HTTP of its `startServer`.
//
//   node serve.mjs KEY_PEM CERT_PEM
//
// Listens on 127.0.0.1, port 0; prints `{"port": N}` once listening, then serves until it is
// killed or its standard input closes (so a test process that dies takes it along).
import {readFileSync} from 'node:fs';
import https from 'node:https';
import {createRequire} from 'node:module';

const require = createRequire(import.meta.url);
const WebPushTestingServer = require('web-push-testing/src/server.js');
const {PushApiModel} = require('web-push-testing/src/PushApiModel.js');

const [keyPath, certPath] = process.argv.slice(2);
if (!keyPath || !certPath) {
	console.error('usage: node serve.mjs KEY_PEM CERT_PEM');
	process.exit(2);
}

const model = new PushApiModel();
// The port given here only goes into the model's notify URL, replaced below once bound.
const service = new WebPushTestingServer(model, 0);
service.setRequestHandlers();

const server = https.createServer(
	{key: readFileSync(keyPath), cert: readFileSync(certPath)},
	service._app,
);
server.on('error', err => {
	console.error(err);
	process.exit(1);
});
server.listen(0, '127.0.0.1', () => {
	const {port} = server.address();
	model.notifyUrl = `https://127.0.0.1:${port}/notify/`;
	process.stdout.write(JSON.stringify({port}) + '\n');
});

process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
