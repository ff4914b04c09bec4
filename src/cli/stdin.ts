/** Enough for any password the rules accept (1024 characters) in any encoding. */
const MAX_BYTES = 64 * 1024;

/**
 * Reads the first line of a stream and drops its line ending (`\n` or `\r\n`); without a line
 * ending, everything up to the end of input. Stops reading at the first newline.
 */
export async function readFirstLine(stream: NodeJS.ReadableStream): Promise<string> {
  stream.setEncoding('utf8');
  let text = '';
  for await (const chunk of stream) {
    text += String(chunk);
    const end = text.indexOf('\n');
    if (end !== -1) {
      text = text.slice(0, end);
      return text.endsWith('\r') ? text.slice(0, -1) : text;
    }
    if (text.length > MAX_BYTES) break;
  }
  return text;
}
