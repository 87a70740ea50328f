// Owns the shape of an outgoing email and of whatever sends one, shared by the delivery channels (core) and the transports (adapters).

export interface EmailMessage {
  readonly to: string[];
  /** Bare address, e.g. `no-reply@example.com`; `fromName` is the display name. */
  readonly from: string;
  readonly fromName?: string;
  readonly subject: string;
  readonly text: string;
  readonly html: string;
  /**
   * The Message-ID (with its angle brackets), fixed per delivery so a send repeated after a crash carries the same
   * one and receivers can drop it; SMTP only (SendGrid's API takes no Message-ID). Default: the transport makes one.
   */
  readonly messageId?: string;
}

export interface EmailTransport {
  /** Resolves once the mail server or API accepted the message; rejects (EmailSendError) otherwise. */
  send(msg: EmailMessage): Promise<void>;
}
