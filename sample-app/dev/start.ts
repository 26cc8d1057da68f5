// `npm start`: runs the sample app's main (the file given as argument) against the Redis at REDIS_URL,
// or, when nothing answers there, against a throwaway redis-server, which stops once this process has
// exited, however it exits (after the app's final flush when a signal stops it). Once the app serves,
// it says what the app uses and how to stop it.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigService } from '@nestjs/config';
import { DEFAULT_PORT, DEFAULT_REDIS_URL } from '../src/config/app.defaults.js';
import { counterKeyPrefix } from '../src/config/counter-options.factory.js';
import { databaseTarget } from '../src/config/database.target.js';
import { redisForTheApp, type RedisForTheApp } from './redis.bootstrap.js';
import { startSummary } from './start-summary.js';

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
// main resolves once the app listens.
await import(pathToFileURL(resolve(main)).href);

// Read as the app reads them (its ConfigModule reads the environment only).
const config = new ConfigService();
const lines = startSummary({
  port: Number(config.get<string>('PORT') || DEFAULT_PORT),
  redisUrl: redis.url,
  throwawayRedis: redis.throwaway,
  database: databaseTarget(config.get<string>('DATABASE_URL')),
  keyPrefix: counterKeyPrefix(config),
});
console.log(lines.join('\n'));
