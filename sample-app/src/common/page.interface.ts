/** Which page a list endpoint was asked for (1-based). */
export interface PageRequest {
  page: number;
  size: number;
}

/** What every list endpoint returns. */
export interface Page<T> extends PageRequest {
  items: T[];
  total: number;
}

export const toPage = <T>([items, total]: [T[], number], { page, size }: PageRequest): Page<T> => ({
  items,
  total,
  page,
  size,
});

/** The rows of the requested page, as TypeORM's `skip` and `take`. */
export const pageWindow = ({ page, size }: PageRequest) => ({ skip: (page - 1) * size, take: size });
