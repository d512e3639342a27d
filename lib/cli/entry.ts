/** The `varve` process: runs the CLI on the process arguments and exits with its code. */
import { runCli } from './main.js';

quietenSdkNodeWarning();
process.exitCode = await runCli(process.argv.slice(2));

/**
 * The AWS SDK warns on every process that talks to AWS under Node < 22, in 8 lines before varve's
 * own output. For a varve user it means one thing, said here in one line: the SDK varve ships
 * works; SDK releases after the first week of January 2027 need Node ≥ 22. The SDK's own switch
 * (AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true) silences both; other warnings pass as
 * they are.
 */
function quietenSdkNodeWarning(): void {
  const emitWarning = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (typeof warning === 'string' && warning.startsWith('NodeVersionSupportWarning:')) {
      process.stderr.write(
        `varve: note: Node ${process.version} is fine for varve; AWS SDK updates after January 2027 need Node ≥ 22 ` +
          '(AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true hides this note)\n',
      );
      return;
    }
    emitWarning(warning, ...rest);
  }) as typeof process.emitWarning;
}
