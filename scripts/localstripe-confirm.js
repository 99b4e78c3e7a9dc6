// Appended to localstripe's fake Stripe.js by scripts/localstripe-server.py
// (tests only): `confirmCardPayment(clientSecret, {payment_method: {card}})`
// with a card Element does what the real Stripe.js does, confirming the
// PaymentIntent with the card typed in it; 3-D Secure, when the card asks
// for it, goes on to localstripe's own dialog.
(function () {
  const make = Stripe;
  Stripe = (key) => {
    const stripe = make(key);
    const authenticate = stripe.confirmCardPayment;
    stripe.confirmCardPayment = async (clientSecret, data) => {
      const element = data && data.payment_method && data.payment_method.card;
      if (!element) return authenticate(clientSecret, data);
      if (!element.value || element.value.card.number.length < 16) {
        return { error: { type: 'validation_error', message: 'Your card number is incomplete.' } };
      }
      const intent = clientSecret.match(/^(pi_\w+)_secret_/)[1];
      try {
        const response = await fetch(`${LOCALSTRIPE_BASE_API}/v1/payment_intents/${intent}/confirm`, {
          method: 'POST',
          body: JSON.stringify({
            key,
            client_secret: clientSecret,
            payment_method_data: { type: 'card', card: element.value.card },
          }),
        });
        const body = await response.json().catch(() => ({}));
        if (response.status !== 200 || body.error) {
          return { error: body.error || { message: 'The payment could not be made.' } };
        }
        if (body.status === 'requires_action') return authenticate(clientSecret, data);
        return { paymentIntent: body };
      } catch (err) {
        return { error: { type: 'api_connection_error', message: String(err) } };
      }
    };
    return stripe;
  };
})();
