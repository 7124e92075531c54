// The app's one script: Propshaft fingerprints it into public/assets (rails assets:precompile).
// It marks the page as scripted, so the stylesheet can tell.
document.documentElement.classList.add("js");
