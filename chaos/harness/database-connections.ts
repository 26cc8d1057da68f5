// Kills the workers' database connections from the server side, as an administrator (or a failover, or
// an idle-session reaper) would: `pg_terminate_backend` on PostgreSQL, `KILL CONNECTION` on MariaDB.
// Only this deployment's connections: other tests may share the server.
import type { DataSource, DataSourceOptions } from 'typeorm';

/**
 * The workers' connection options, tagged so their sessions can be told apart: PostgreSQL sessions
 * carry `application_name`. MariaDB has no such tag; there each deployment has a database of its own.
 */
export function taggedConnection(options: DataSourceOptions, tag: string): DataSourceOptions {
  return options.type === 'postgres' ? { ...options, applicationName: tag } : options;
}

/**
 * Kills the sessions of the workers of this deployment; returns how many. PostgreSQL: every session
 * tagged `tag` (idle ones in the pools too). MariaDB: the sessions with a transaction open on the
 * deployment's database (the observer, which shares that database, never keeps one open).
 */
export async function killWorkerConnections(observer: DataSource, tag: string): Promise<number> {
  if (observer.options.type === 'postgres') {
    const rows: Array<{ killed: boolean }> = await observer.query(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = $1`,
      [tag],
    );
    return rows.filter((row) => row.killed).length;
  }
  const rows: Array<{ id: number | string }> = await observer.query(
    `SELECT t.trx_mysql_thread_id AS id FROM information_schema.INNODB_TRX t
       JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
      WHERE p.DB = DATABASE() AND p.ID <> CONNECTION_ID()`,
  );
  let killed = 0;
  for (const { id } of rows) {
    // The session may have ended meanwhile: "Unknown thread id" is not a failure of the fault.
    await observer.query(`KILL CONNECTION ${Number(id)}`).then(
      () => killed++,
      (error: { errno?: number }) => {
        if (error.errno !== 1094 && (error as { driverError?: { errno?: number } }).driverError?.errno !== 1094)
          throw error;
      },
    );
  }
  return killed;
}
