// The functions test/support/browser_page.rb runs in a page (an expression: the Ruby side
// evaluates `(this file).name(arguments)` with Runtime.evaluate).
({
  // Resolves with predicate()'s value once it is truthy, checking every pollMs; rejects past
  // timeoutMs with what the page shows instead.
  waitUntil(predicate, timeoutMs, pollMs, label) {
    return new Promise((resolve, reject) => {
      const limit = Date.now() + timeoutMs;
      const check = () => {
        let value;
        try {
          value = predicate();
        } catch (error) {
          reject(error);
          return;
        }
        if (value) resolve(value);
        else if (Date.now() > limit) reject(new Error(`timed out waiting for ${label}; the page shows: ${document.body.innerText}`));
        else setTimeout(check, pollMs);
      };
      check();
    });
  },

  // The middle of the element selector finds, in viewport coordinates, to click it.
  centerOf(selector) {
    const element = document.querySelector(selector);
    if (!element) throw new Error(`no element ${selector}`);
    const box = element.getBoundingClientRect();
    return [box.x + box.width / 2, box.y + box.height / 2];
  },
})
