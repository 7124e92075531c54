# frozen_string_literal: true

require "json"
require_relative "lib/up/version"

Gem::Specification.new do |spec|
  spec.name = "opal-up"
  spec.version = Up::VERSION
  spec.summary = "UP!, a fast and strict Rack server with a native engine, on MRI and on Node"
  spec.description = <<~TEXT.tr("\n", " ").strip
    A Rack 3.2 server whose HTTP/1.1, WebSocket, SSE, pub/sub, TLS and static file work is done
    by one engine written in C, with three runtimes: up_ruby (MRI), up (Opal on Node, the engine
    as a Node-API addon) and up_node (Opal on Node's http module); `rackup -s up` and
    `rails s -u up` serve with up_ruby. Installing compiles the engine, which needs a C compiler,
    make, Ruby's headers and the zlib and OpenSSL 3 headers (Debian: gcc make ruby-dev zlib1g-dev
    libssl-dev). up and up_node need Node.js, and up needs Node's headers at install
    time (Debian: nodejs, or libnode-dev); their npm packages come inside the gem.
  TEXT
  spec.authors = ["UP! developers"]
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.1"

  repository = "https://github.com/janbiedermann/up"
  spec.homepage = repository
  spec.metadata = {
    "homepage_uri" => repository,
    "source_code_uri" => repository,
    "changelog_uri" => "#{repository}/blob/main/CHANGELOG.md",
    "bug_tracker_uri" => "#{repository}/issues",
    "documentation_uri" => "#{repository}/tree/main/docs",
    "rubygems_mfa_required" => "true"
  }

  # The npm packages node/package-lock.json pins (ws, ioredis and theirs), as `npm ci` put
  # them in node/node_modules (`rake build` runs it first), licences included.
  lock = JSON.parse(File.read(File.join(__dir__, "node", "package-lock.json")))
  npm = lock.fetch("packages").keys.grep(%r{\Anode_modules/}).flat_map do |dir|
    Dir.glob("node/#{dir}/**/*", File::FNM_DOTMATCH, base: __dir__).reject { |f| f.end_with?(".d.ts", ".map") }
  end
  spec.files = Dir.glob(["lib/**/*.{rb,ru}", "ext/up/**/*.{c,h,rb}", "ext/up/node/build",
                         "opal/**/*.{rb,opalerb}", "node/{package.json,package-lock.json}",
                         "exe/*", "README.md", "CHANGELOG.md", "LICENSE", "docs/**/*.md"], base: __dir__) +
               Dir.glob("node/*/**/*.js", base: __dir__).reject { |f| f.start_with?("node/node_modules/") } +
               npm.select { |f| File.file?(File.join(__dir__, f)) }
  spec.bindir = "exe"
  spec.executables = ["up", "up_ruby", "up_node", "upctl"]
  spec.extensions = ["ext/up/extconf.rb"]
  spec.require_paths = ["lib"]

  spec.add_dependency "opal", "~> 1.8.3" # up and up_node compile the app with it
  spec.add_dependency "rack", ">= 3.0", "< 4"
  spec.add_dependency "rackup", ">= 2.1", "< 3" # `rackup -s up` and `rails s -u up`
end
