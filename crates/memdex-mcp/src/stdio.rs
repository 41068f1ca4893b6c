//! The stdio transport with JSON-RPC 2.0's parse error: the SDK drops a line that is not JSON
//! without a word (other MCP SDKs do too), while JSON-RPC 2.0 answers it with `-32700` and
//! `id: null`. Lines pass through a pump: every line that is JSON (or blank) goes on to the
//! SDK's transport unchanged, the rest is answered here; the SDK's answers and these go out
//! through one writer, a whole line at a time, so they never interleave.

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest line checked here (the SDK's own limit): a longer one goes on to the SDK, which
/// drops it.
const MAX_CHECKED_LINE: u64 = 16 << 20;
/// Bytes between the pump and the SDK in each direction.
const PIPE_BYTES: usize = 1 << 16;

/// The JSON-RPC answer to a line that is not JSON, or `None` for a line that is (or is blank).
pub fn parse_error(line: &[u8]) -> Option<String> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let message = match std::str::from_utf8(line) {
        Err(e) => format!("Parse error: not UTF-8: {e}"),
        Ok(text) => {
            let e = serde_json::from_str::<serde::de::IgnoredAny>(text).err()?;
            format!("Parse error: {e}")
        }
    };
    let answer = json!({"jsonrpc": "2.0", "id": null,
                        "error": {"code": -32700, "message": message}});
    Some(answer.to_string())
}

/// The SDK's end of the pump: what it reads, what it writes.
pub type SdkPipes = (tokio::io::DuplexStream, tokio::io::DuplexStream);

/// Starts the pump between `input`/`output` (the process's stdin and stdout) and the SDK.
/// Returns the SDK's reader and writer, and the task that ends once both directions are done
/// (input at its end, and everything the SDK wrote flushed).
pub fn pump<R, W>(input: R, output: W) -> (SdkPipes, tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sdk_in, mut to_sdk) = tokio::io::duplex(PIPE_BYTES);
    let (sdk_out, from_sdk) = tokio::io::duplex(PIPE_BYTES);
    let (errors, mut error_rx) = mpsc::unbounded_channel::<String>();
    let reader = tokio::spawn(async move {
        let mut input = BufReader::new(input);
        loop {
            let mut line = Vec::new();
            let n = match (&mut input)
                .take(MAX_CHECKED_LINE)
                .read_until(b'\n', &mut line)
                .await
            {
                Ok(n) => n,
                Err(e) => {
                    tracing::error!("reading stdin: {e}");
                    break;
                }
            };
            if n == 0 {
                break;
            }
            let whole = line.ends_with(b"\n");
            if whole {
                if let Some(answer) = parse_error(&line) {
                    if errors.send(answer).is_err() {
                        break;
                    }
                    continue;
                }
            }
            // JSON, an unterminated last line, or a line too long to check: the SDK's
            if to_sdk.write_all(&line).await.is_err() {
                break;
            }
            if !whole && n as u64 == MAX_CHECKED_LINE {
                // the rest of the long line, as it comes
                loop {
                    let mut rest = Vec::new();
                    match (&mut input)
                        .take(MAX_CHECKED_LINE)
                        .read_until(b'\n', &mut rest)
                        .await
                    {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    let end = rest.ends_with(b"\n");
                    if to_sdk.write_all(&rest).await.is_err() || end {
                        break;
                    }
                }
            }
        }
        // dropping `to_sdk` tells the SDK the input ended
    });
    let writer = tokio::spawn(async move {
        let mut output = output;
        let mut lines = BufReader::new(from_sdk).lines();
        let (mut sdk_open, mut errors_open) = (true, true);
        while sdk_open || errors_open {
            let line = tokio::select! {
                l = lines.next_line(), if sdk_open => match l {
                    Ok(Some(l)) => l,
                    _ => { sdk_open = false; continue; }
                },
                e = error_rx.recv(), if errors_open => match e {
                    Some(e) => e,
                    None => { errors_open = false; continue; }
                },
            };
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if output.write_all(&bytes).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
        let _ = reader.await;
    });
    ((sdk_in, sdk_out), writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_that_are_not_json_get_a_parse_error() {
        for ok in [
            &b"{\"jsonrpc\": \"2.0\", \"method\": \"ping\", \"id\": 1}\n"[..],
            b"[1, 2]\r\n",
            b"\xEF\xBB\xBF{}\n",
            b"   \n",
            b"\n",
        ] {
            assert_eq!(parse_error(ok), None, "{:?}", String::from_utf8_lossy(ok));
        }
        for bad in [&b"hello\n"[..], b"{\"a\": \n", b"{} {}\n", b"\"\xff\"\n"] {
            let e = parse_error(bad).expect("a parse error");
            let v: serde_json::Value = serde_json::from_str(&e).unwrap();
            assert_eq!(v["error"]["code"], -32700, "{e}");
            assert!(v["id"].is_null() && v["jsonrpc"] == "2.0", "{e}");
        }
    }

    #[tokio::test]
    async fn the_pump_answers_bad_lines_and_passes_the_rest() {
        let (mut client, server_io) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server_io);
        let ((mut sdk_in, mut sdk_out), done) = pump(server_in, server_out);
        client.write_all(b"not json\n{\"x\": 1}\n").await.unwrap();
        let mut got = vec![0u8; 9];
        sdk_in.read_exact(&mut got).await.unwrap();
        assert_eq!(got, b"{\"x\": 1}\n");
        sdk_out.write_all(b"{\"answer\": 2}\n").await.unwrap();
        drop(sdk_out);
        let (client_read, mut client_write) = tokio::io::split(client);
        client_write.shutdown().await.unwrap();
        drop(client_write);
        let mut lines = BufReader::new(client_read).lines();
        let mut seen = Vec::new();
        while let Ok(Some(l)) = lines.next_line().await {
            seen.push(l);
            if seen.len() == 2 {
                break;
            }
        }
        assert!(seen.iter().any(|l| l.contains("-32700")), "{seen:?}");
        assert!(seen.contains(&"{\"answer\": 2}".to_string()), "{seen:?}");
        drop(sdk_in);
        done.await.unwrap();
    }
}
