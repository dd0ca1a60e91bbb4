{
  description = "Flake for the rnx kernel";

  inputs = {
    # Pinned to the kernel-builder release that builds build.toml's edition 5;
    # `kscaffold update` moves the pin and the edition together.
    kernel-builder.url = "github:huggingface/kernels/v0.17.2";
  };

  outputs =
    { self, kernel-builder }:
    kernel-builder.lib.genKernelFlakeOutputs {
      inherit self;
      path = ./.;
      # What tests/ imports besides pytest, torch and kernels: requirements-dev.txt's list.
      pythonCheckInputs = ps: with ps; [ ];
    };
}
