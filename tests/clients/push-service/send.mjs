// The other side of the push service's self-test: the web-push package as a push sender.
//
//   node send.mjs keys
//     prints {"publicKey", "privateKey"}: a new VAPID key pair (base64url)
//   node send.mjs send CA_PEM ENDPOINT P256DH AUTH VAPID_PUBLIC VAPID_PRIVATE PAYLOAD
//     sends PAYLOAD (aes128gcm, VAPID) to the subscription, trusting only CA_PEM;
//     prints {"statusCode", "body"} for any HTTP answer, fails on anything else
import {readFileSync} from 'node:fs';
import https from 'node:https';
import {createRequire} from 'node:module';

const require = createRequire(import.meta.url);
const webPush = require('web-push');

const [command, ...args] = process.argv.slice(2);
if (command === 'keys') {
	console.log(JSON.stringify(webPush.generateVAPIDKeys()));
} else if (command === 'send' && args.length === 7) {
	const [caPath, endpoint, p256dh, auth, vapidPublic, vapidPrivate, payload] = args;
	const agent = new https.Agent({ca: readFileSync(caPath)});
	try {
		const result = await webPush.sendNotification({endpoint, keys: {p256dh, auth}}, payload, {
			TTL: 60,
			vapidDetails: {
				subject: 'mailto:push-selftest@bowline.test',
				publicKey: vapidPublic,
				privateKey: vapidPrivate,
			},
			agent,
		});
		console.log(JSON.stringify({statusCode: result.statusCode, body: result.body}));
	} catch (err) {
		// web-push rejects on a status other than 2xx: that is still an answer.
		if (typeof err.statusCode === 'number') {
			console.log(JSON.stringify({statusCode: err.statusCode, body: err.body}));
		} else {
			console.error(err);
			process.exit(1);
		}
	}
} else {
	console.error('usage: node send.mjs keys | send CA_PEM ENDPOINT P256DH AUTH VAPID_PUBLIC VAPID_PRIVATE PAYLOAD');
	process.exit(2);
}
