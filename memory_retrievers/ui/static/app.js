// memory inspector: progressive enhancement only; every page works without it.
// A confirmation button stays disabled until the exact word is typed (the server checks it again).
document.addEventListener("DOMContentLoaded", () => {
  for (const input of document.querySelectorAll("input[data-word]")) {
    const button = input.form && input.form.querySelector("button[type=submit]");
    if (!button) continue;
    const sync = () => { button.disabled = input.value !== input.dataset.word; };
    input.addEventListener("input", sync);
    sync();
  }
});
