export const handler = async (): Promise<never> => { throw new Error('handler not wired yet'); };
