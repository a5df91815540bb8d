/// Lengths libjack takes for names. A longer server name overflows a fixed buffer inside libjack (a 30,000-byte name
/// smashed the stack), so every name is checked against these before it reaches the library.
public enum JackNames {
    /// A client name (JACK's `jack_client_name_size()` is 64 with the terminating NUL).
    public static let clientBytes = 63
    /// A server name (libjack copies it into a buffer of `JACK_SERVER_NAME_SIZE`, 256; kept short and safe).
    public static let serverBytes = 63
}
