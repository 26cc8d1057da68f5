// `npm start`: runs the sample app's main (the file given as argument) against the Redis at REDIS_URL,
// or, when nothing answers there, against a throwaway redis-server, which stops once this process has
// exited, however it exits (after the app's final flush when a signal stops it). Once the app serves,
// it says what the app uses and how to stop it.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_REDIS_URL } from '../src/config/app.defaults.js';
import { redisForTheApp, type RedisForTheApp } from './redis.bootstrap.js';
import { readStartSummary, startSummaryLines } from './start-summary.js';

const [main] = process.argv.slice(2);

console.log('npm start: starting the online judge…');
let redis: RedisForTheApp;
try {
  redis = await redisForTheApp(process.env.REDIS_URL || DEFAULT_REDIS_URL);
} catch (error) {
  console.error(`The online judge could not start: ${(error as Error).message}`);
  process.exit(1);
}
// The app reads the URL from the environment.
process.env.REDIS_URL = redis.url;
// main's module resolves once the app listens.
await import(pathToFileURL(resolve(main)).href);
console.log(startSummaryLines(await readStartSummary(resolve(main), redis)).join('\n'));
