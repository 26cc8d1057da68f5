/**
 * Sets `variables` in process.env, for an app a test starts in this process; the function returned puts
 * back what each was before (unset where it was unset).
 */
export function setEnvironment(variables: Record<string, string>): () => void {
  const saved = Object.keys(variables).map((key) => [key, process.env[key]] as const);
  Object.assign(process.env, variables);
  return () => {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}
