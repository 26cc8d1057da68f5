// `npm start`: runs the sample app's main (the file given as argument) against the Redis at REDIS_URL,
// or, when nothing answers there, against a throwaway redis-server, which stops once this process has
// exited, however it exits (after the app's final flush when a signal stops it).
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_REDIS_URL } from '../src/config/app.defaults.js';
import { redisForTheApp } from './redis.bootstrap.js';

const [main] = process.argv.slice(2);

try {
  // The app reads the URL from the environment.
  process.env.REDIS_URL = await redisForTheApp(process.env.REDIS_URL || DEFAULT_REDIS_URL);
} catch (error) {
  console.error(`The online judge could not start: ${(error as Error).message}`);
  process.exit(1);
}
await import(pathToFileURL(resolve(main)).href);
