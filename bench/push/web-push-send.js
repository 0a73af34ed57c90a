// The peer of the push benchmark: npm `web-push` sending the same messages to the same
// subscriptions as our sender, with the same number in flight, from one Node process.
//
// node web-push-send.js <setup.json> <messages> <in-flight> <warm-up>
// setup.json (written by `fanout setup`): {"vapid": {"publicKey", "privateKey", "subject"},
// "subscriptions": [{"endpoint", "keys": {"p256dh", "auth"}}]}. Prints one JSON line:
// {"messages", "seconds", "rate"}. The receiver's certificate is trusted via NODE_EXTRA_CA_CERTS.
'use strict';

const fs = require('node:fs');
const https = require('node:https');
const webpush = require('web-push');

const [setupPath, messagesArg, inFlightArg, warmUpArg] = process.argv.slice(2);
const setup = JSON.parse(fs.readFileSync(setupPath, 'utf8'));
const messages = Number(messagesArg);
const inFlight = Number(inFlightArg);
const warmUp = Number(warmUpArg);
if (!(messages > 0 && inFlight > 0 && warmUp >= 0)) {
  console.error('usage: node web-push-send.js <setup.json> <messages> <in-flight> <warm-up>');
  process.exit(2);
}

const subs = setup.subscriptions;
// A keep-alive agent with one socket per send in flight: the best web-push can be given.
const agent = new https.Agent({ keepAlive: true, maxSockets: inFlight });
const options = {
  TTL: 3600,
  agent,
  timeout: 10000,
  vapidDetails: {
    subject: setup.vapid.subject,
    publicKey: setup.vapid.publicKey,
    privateKey: setup.vapid.privateKey,
  },
};

// The same notification as the Rust sender's, distinct per message.
function payload(i) {
  return JSON.stringify({
    body: 'È ora dello spuntino: uno yogurt o un frutto.',
    kind: 'meal_snack',
    tag: `bench-${i}`,
    title: 'Promemoria',
    url: '/plan',
  });
}

async function run(count, offset) {
  let next = 0;
  let failures = 0;
  async function worker() {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      const n = offset + i;
      try {
        const res = await webpush.sendNotification(subs[n % subs.length], payload(n), options);
        if (res.statusCode !== 201) failures++;
      } catch (e) {
        failures++;
        if (failures === 1) console.error(`web-push: ${e.message} ${e.statusCode || ''}`);
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
  if (failures > 0) throw new Error(`${failures} of ${count} messages were not answered 201`);
}

(async () => {
  await run(warmUp, 0);
  const started = process.hrtime.bigint();
  await run(messages, warmUp);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(JSON.stringify({ messages, seconds, rate: messages / seconds }));
  agent.destroy();
})().catch((e) => {
  console.error(`web-push-send: ${e.message}`);
  process.exit(1);
});
