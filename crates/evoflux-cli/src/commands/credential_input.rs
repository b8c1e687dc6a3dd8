//! Reading credential values for `evoflux plugin credentials set`: from a
//! prompt on the terminal (not echoed for secret fields) or from standard
//! input, one line per key, so a secret never has to be on the command
//! line (where shell history and the process list keep it).

use std::fmt;
use std::io::{self, BufRead, IsTerminal, Write};

use evoflux_plugins::credentials::{CredentialField, FieldType};

/// Where values named without `=VALUE` are read from. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueSource {
    /// Standard input, one line per key in the order given (`--stdin`, or
    /// standard input is not a terminal).
    Stdin,
    /// A prompt on the terminal; secrets are not echoed.
    Prompt,
}

impl ValueSource {
    /// `--stdin`, or whatever standard input is.
    pub fn choose(stdin_flag: bool) -> ValueSource {
        if stdin_flag || !io::stdin().is_terminal() {
            ValueSource::Stdin
        } else {
            ValueSource::Prompt
        }
    }
}

/// Why a value could not be read. Closed; each has a stable code.
#[derive(Debug)]
pub enum InputError {
    /// Standard input ended before this key's line.
    Missing {
        key: String,
    },
    /// The line was empty (clearing is `credentials clear`).
    Empty {
        key: String,
    },
    Io {
        key: String,
        source: io::Error,
    },
}

impl InputError {
    pub const fn code(&self) -> &'static str {
        match self {
            InputError::Missing { .. } => "plugin/credential-input-missing",
            InputError::Empty { .. } => "plugin/credential-input-empty",
            InputError::Io { .. } => "plugin/credential-input-unreadable",
        }
    }

    pub fn key(&self) -> &str {
        match self {
            InputError::Missing { key }
            | InputError::Empty { key }
            | InputError::Io { key, .. } => key,
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Missing { key } => write!(
                f,
                "standard input ended before a value for `{key}` (one line per KEY, in the order given)"
            ),
            InputError::Empty { key } => write!(
                f,
                "the value given for `{key}` is empty; clear a value with `credentials <id> clear {key}`"
            ),
            InputError::Io { key, source } => {
                write!(f, "cannot read a value for `{key}`: {source}")
            }
        }
    }
}

/// Reads one value per field, in order, from `source`.
pub fn read_values(
    source: ValueSource,
    fields: &[&CredentialField],
) -> Result<Vec<String>, InputError> {
    let mut values = Vec::with_capacity(fields.len());
    let stdin = io::stdin();
    let mut lines = stdin.lock();
    for field in fields {
        let key = &field.key;
        let line = match source {
            ValueSource::Stdin => read_line(&mut lines),
            ValueSource::Prompt => {
                let prompt = format!("{} ({key}): ", field.label);
                match field.field_type {
                    FieldType::Secret => read_hidden(&prompt, &mut lines),
                    FieldType::Text | FieldType::Url | FieldType::Boolean => {
                        prompt_visible(&prompt).and_then(|()| read_line(&mut lines))
                    }
                }
            }
        };
        let value = match line {
            Ok(Some(v)) => v,
            Ok(None) => return Err(InputError::Missing { key: key.clone() }),
            Err(source) => {
                return Err(InputError::Io {
                    key: key.clone(),
                    source,
                });
            }
        };
        if value.is_empty() {
            return Err(InputError::Empty { key: key.clone() });
        }
        values.push(value);
    }
    Ok(values)
}

/// One line without its line ending; `None` at the end of input.
fn read_line(input: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    if line.ends_with('\n') {
        line.pop();
        if line.ends_with('\r') {
            line.pop();
        }
    }
    Ok(Some(line))
}

fn prompt_visible(prompt: &str) -> io::Result<()> {
    let mut err = io::stderr().lock();
    err.write_all(prompt.as_bytes())?;
    err.flush()
}

/// Prompts on stderr and reads a line from the terminal on stdin with echo
/// off; echo is restored however the read ends.
#[cfg(unix)]
fn read_hidden(prompt: &str, input: &mut impl BufRead) -> io::Result<Option<String>> {
    use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};

    struct Restore {
        original: rustix::termios::Termios,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = tcsetattr(io::stdin(), OptionalActions::Now, &self.original);
        }
    }

    prompt_visible(prompt)?;
    let original = tcgetattr(io::stdin())?;
    let mut quiet = original.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    // The user's Enter still moves to the next line.
    quiet.local_modes.insert(LocalModes::ECHONL);
    tcsetattr(io::stdin(), OptionalActions::Now, &quiet)?;
    let restore = Restore { original };
    let line = read_line(input);
    drop(restore);
    line
}

#[cfg(not(unix))]
fn read_hidden(prompt: &str, input: &mut impl BufRead) -> io::Result<Option<String>> {
    // No terminal control here: the value is echoed.
    prompt_visible(prompt)?;
    read_line(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_lose_their_endings_and_end_of_input_is_none() {
        let mut input = io::Cursor::new("one\r\ntwo\nthree");
        assert_eq!(read_line(&mut input).unwrap().as_deref(), Some("one"));
        assert_eq!(read_line(&mut input).unwrap().as_deref(), Some("two"));
        assert_eq!(read_line(&mut input).unwrap().as_deref(), Some("three"));
        assert_eq!(read_line(&mut input).unwrap(), None);
    }
}
